#!/bin/sh
# zmem-hook-id: 3f1c6f0a-zmem
# Installed by `zmem hooks install`; `zmem hooks uninstall` removes it and restores any hook it
# moved aside. Keeps zmem's index fresh in the background, so git returns at once; never fails
# the git command and prints nothing. Problems are logged to .zmem/hook.log.
HOOK='@HOOK@'
ZMEM_PYTHON='@PYTHON@'
case $0 in */*) dir=${0%/*} ;; *) dir=. ;; esac
here=$(CDPATH='' cd -P -- "$dir" 2>/dev/null && pwd -P) || here=$dir
# The recursion guard names this hook (directory and name), so a hook chained below can still run
# git, and other repositories' or other hooks' shims behave as usual. If it names us, we were
# called back through our own chain (a copied shim or a wrapper moved aside): do nothing.
me="$here/$HOOK"
[ "$ZMEM_HOOK_CHAINED" = "$me" ] && exit 0
status=0
# A hook that was here before zmem runs first, with the same arguments and standard input;
# its exit status is this hook's exit status.
if [ -x "$here/$HOOK.zmem-prev" ]; then
    ZMEM_HOOK_CHAINED=$me "$here/$HOOK.zmem-prev" "$@"
    status=$?
fi
# zmem's part: detached, silent, its exit status ignored (a failing post-checkout fails checkout).
if [ -x "$ZMEM_PYTHON" ]; then
    # -P: never import a zmem/ found in the working tree (git runs hooks at its top)
    ("$ZMEM_PYTHON" -P -m zmem.hookrun "$HOOK" "$@" </dev/null >/dev/null 2>&1 &)
elif command -v zmem >/dev/null 2>&1; then
    (zmem hook "$HOOK" "$@" </dev/null >/dev/null 2>&1 &)
fi
exit $status
