#!/bin/sh
# The browser tests drive Debian's chromium (never `playwright install`, which downloads a browser
# build from outside). Installs it when it is missing and we are root; otherwise says how, in one line.
CHROMIUM="${HITL_CHROMIUM:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "make: installing Debian's chromium for the browser tests (about 15 s)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium) >/dev/null \
        && [ -x "$CHROMIUM" ] && exit 0
fi
echo "make: the browser tests need $CHROMIUM: run 'sudo apt-get install --no-install-recommends chromium' (or set HITL_CHROMIUM)" >&2
exit 1
