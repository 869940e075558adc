#!/usr/bin/env bash
# The test command (the README's, and what .ci/run calls): install with the test extras, make sure
# the browser tests have Debian's chromium and the TypeScript client's tests node and npm
# (installing them when they are missing and this user can), then run every test. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1

have_browser() { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }
have_node() { command -v node >/dev/null && command -v npm >/dev/null; }

if [ "$(id -u)" -eq 0 ]; then as_root=""; elif sudo -n true 2>/dev/null; then as_root="sudo -n"; else as_root=no; fi
apt_install() {  # what: the packages; for: what needs them
    local what="$1" for="$2"
    if [ "$as_root" != no ] && command -v apt-get >/dev/null; then
        echo "scripts/test.sh: installing $what for $for" >&2
        $as_root apt-get update -qq || true
        # shellcheck disable=SC2086
        $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $what || echo "scripts/test.sh: could not install $what" >&2
    fi
}
have_browser || apt_install "chromium chromium-driver" "the browser tests"
have_node || apt_install "nodejs npm" "the TypeScript client's tests"
for need in browser node; do
    "have_$need" && continue
    if [ "${CI:-}" = "true" ]; then
        echo "scripts/test.sh: CI needs the $need tests' tools, and they could not be installed" >&2
    else  # a developer's machine without root: say so, and skip only those tests
        echo "scripts/test.sh: no $need tools here and no way to install them: those tests are skipped" >&2
        if [ "$need" = browser ]; then export AGENTMEM_ALLOW_NO_BROWSER=1; else export AGENTMEM_ALLOW_NO_NODE=1; fi
    fi
done

python3 -m venv .venv
.venv/bin/pip install -c constraints.txt -e '.[test]'
if have_node; then npm ci --prefix clients/typescript --no-audit --no-fund; fi
exec .venv/bin/python -m pytest "$@"
