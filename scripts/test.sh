#!/usr/bin/env bash
# The test command (the README's, and what .ci/run calls): install with the test extras, make sure
# the browser tests have Debian's chromium (installing it when it is missing and this user can),
# then run every test. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1

have_browser() { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }

if ! have_browser && command -v apt-get >/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then as_root=""; elif sudo -n true 2>/dev/null; then as_root="sudo -n"; else as_root=no; fi
    if [ "$as_root" != no ]; then
        echo "scripts/test.sh: installing chromium and chromium-driver for the browser tests" >&2
        $as_root apt-get update -qq || true
        $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver \
            || echo "scripts/test.sh: could not install chromium" >&2
    fi
fi
if ! have_browser; then
    if [ "${CI:-}" = "true" ]; then
        echo "scripts/test.sh: CI needs chromium for the browser tests, and it could not be installed" >&2
    else  # a developer's machine without root: say so, and skip only those tests
        echo "scripts/test.sh: no chromium here and no way to install it: the browser tests are skipped" >&2
        export AGENTMEM_ALLOW_NO_BROWSER=1
    fi
fi

python3 -m venv .venv
.venv/bin/pip install -c constraints.txt -e '.[test]'
exec .venv/bin/python -m pytest "$@"
