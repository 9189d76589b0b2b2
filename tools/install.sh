#!/usr/bin/env bash
# `make install` / `make uninstall`: tools/install.sh install|uninstall [DIR]
#
# install: copies the debugger entry scripts and the package (with the built extension) to
# DIR (default ~/.local/share/tokio-async), laid out as in the repository so the entry
# scripts find the package next to them, the `tokio-async` executable to DIR/bin, and adds
# one line to GDB's and one to LLDB's init file in $HOME, unless the line is already there.
# uninstall: removes DIR and exactly those two lines; the rest of the init files is kept.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
action=${1:-}
dir=${2:-${INSTALL_DIR:-}}
dir=${dir:-$HOME/.local/share/tokio-async}
# Written into DIR so that neither command ever replaces or deletes a folder it did not make.
marker=.tokio-async-install

die() {
    echo "tokio-async install: $*" >&2
    exit 1
}

case $dir in
/*) ;;
*) dir=$PWD/$dir ;;
esac
dir=${dir%/}
# The path goes verbatim into the init files, whose commands split at spaces and quotes.
case $dir in
*[[:space:]\"\'\\]*) die "the folder's path must not contain spaces, quotes or backslashes: $dir" ;;
"") die "the folder must not be /" ;;
esac

gdb_line="source $dir/gdb-scripts/tokio_async.py"
lldb_line="command script import $dir/lldb-scripts/tokio_async.py"

# GDB reads only the first home init file it finds, and the XDG one comes first.
gdb_xdg_init=${XDG_CONFIG_HOME:-$HOME/.config}/gdb/gdbinit
gdb_init() {
    if [ -f "$gdb_xdg_init" ]; then echo "$gdb_xdg_init"; else echo "$HOME/.gdbinit"; fi
}
lldb_init=$HOME/.lldbinit

add_line() { # FILE LINE
    local file=$1 line=$2
    if [ -f "$file" ] && grep -qxF -- "$line" "$file"; then
        echo "  $file: already loads it"
        return
    fi
    # A last line without its newline would run into ours.
    if [ -s "$file" ] && [ -n "$(tail -c 1 "$file")" ]; then echo >>"$file"; fi
    echo "$line" >>"$file"
    echo "  $file: added '$line'"
}

remove_line() { # FILE LINE
    local file=$1 line=$2
    [ -f "$file" ] && grep -qxF -- "$line" "$file" || return 0
    local kept
    kept=$(mktemp)
    grep -vxF -- "$line" "$file" >"$kept" || true
    # Rewritten in place, so a symlinked init file stays a symlink and keeps its mode.
    cat "$kept" >"$file"
    rm -f "$kept"
    echo "  $file: removed '$line'"
}

install() {
    local package=$repo/python/tokio_async_glue
    [ -f "$package/_core.abi3.so" ] || die "the extension is not built: run make install (or make build first)"
    [ -x "$repo/target/release/tokio-async" ] || die "the executable is not built: run make install (or make build first)"
    if [ -e "$dir" ] && [ ! -e "$dir/$marker" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
        die "$dir exists and is not an earlier install; choose another INSTALL_DIR"
    fi
    # Built beside the old copy and swapped in, so a debugger that has the old extension
    # loaded keeps its file and nobody sees half a copy.
    local parent staging
    parent=$(dirname "$dir")
    mkdir -p "$parent"
    staging=$(mktemp -d "$parent/.tokio-async.XXXXXX")
    trap 'rm -rf "$staging"' EXIT
    mkdir -p "$staging/gdb-scripts" "$staging/lldb-scripts" "$staging/python/tokio_async_glue" "$staging/bin"
    cp "$repo/target/release/tokio-async" "$staging/bin/"
    cp "$repo/gdb-scripts/tokio_async.py" "$staging/gdb-scripts/"
    cp "$repo/lldb-scripts/tokio_async.py" "$staging/lldb-scripts/"
    # The package's modules and the extension, nothing left by Python or a build.
    (cd "$package" && find . -name __pycache__ -prune -o \( -name '*.py' -o -name _core.abi3.so \) -print0 |
        xargs -0 cp --parents -t "$staging/python/tokio_async_glue")
    git -C "$repo" describe --always --dirty >"$staging/$marker" 2>/dev/null || echo unknown >"$staging/$marker"
    chmod 755 "$staging"
    if [ -e "$dir" ]; then
        mv "$dir" "$staging.old"
        mv "$staging" "$dir"
        rm -rf "$staging.old"
    else
        mv "$staging" "$dir"
    fi
    trap - EXIT
    echo "tokio-async: installed to $dir (the executable: $dir/bin/tokio-async)"
    add_line "$(gdb_init)" "$gdb_line"
    add_line "$lldb_init" "$lldb_line"
}

uninstall() {
    remove_line "$HOME/.gdbinit" "$gdb_line"
    remove_line "$gdb_xdg_init" "$gdb_line"
    remove_line "$lldb_init" "$lldb_line"
    if [ -e "$dir/$marker" ]; then
        rm -rf "$dir"
        echo "tokio-async: removed $dir"
    elif [ -e "$dir" ]; then
        die "$dir is not an install of tokio-async (no $marker): left in place"
    else
        echo "tokio-async: nothing installed at $dir"
    fi
}

case $action in
install) install ;;
uninstall) uninstall ;;
*) die "usage: tools/install.sh install|uninstall [DIR]" ;;
esac
