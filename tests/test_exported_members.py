import agentmem


def test_all_is_sorted_and_complete() -> None:
    assert agentmem.__all__ == sorted(agentmem.__all__)
    public = {n for n in dir(agentmem) if not n.startswith("_") and n[0].isupper()}
    assert public == set(agentmem.__all__)
