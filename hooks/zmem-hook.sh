#!/bin/sh
# zmem-hook-id: 3f1c6f0a-zmem
# Installed by `zmem hooks install`; `zmem hooks uninstall` removes it and restores any hook it
# moved aside. Keeps zmem's index fresh in the background, so git returns at once; never fails
# the git command and prints nothing. Problems are logged to .zmem/hook.log.
HOOK='@HOOK@'
ZMEM_PYTHON='@PYTHON@'
here=$(dirname "$0")
status=0
# Only the outermost shim runs zmem: a copied shim chained below this one must not run it twice.
outermost=1
[ -n "$ZMEM_HOOK_RUNNING" ] && outermost=0
export ZMEM_HOOK_RUNNING=1
# A hook that was here before zmem runs first, with the same arguments and standard input;
# its exit status is this hook's exit status. The guard stops a copied shim from looping.
if [ -z "$ZMEM_HOOK_CHAINED" ] && [ -x "$here/$HOOK.zmem-prev" ]; then
    ZMEM_HOOK_CHAINED=1 "$here/$HOOK.zmem-prev" "$@"
    status=$?
fi
if [ "$outermost" = 1 ]; then
    if [ -x "$ZMEM_PYTHON" ]; then
        ("$ZMEM_PYTHON" -m zmem.hookrun "$HOOK" "$@" </dev/null >/dev/null 2>&1 &)
    elif command -v zmem >/dev/null 2>&1; then
        (zmem hook "$HOOK" "$@" </dev/null >/dev/null 2>&1 &)
    fi
fi
exit $status
