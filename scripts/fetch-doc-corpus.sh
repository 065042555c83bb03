#!/bin/sh
# The labelled documentation corpus for `cargo bench --bench cluster_quality` (docs/page-clustering.md):
# Debian's rust-doc, and every version the configured Debian suites offer of python-django-doc
# and postgresql-doc-15 (bookworm and bookworm-security each carry one: the version twins).
# Extracted under target/doc-corpus/<package>/<version>/. Prints the directory.
set -eu
cd "$(dirname "$0")/.."
out=target/doc-corpus
mkdir -p "$out/debs"
for pkg in rust-doc python-django-doc postgresql-doc-15; do
    for v in $(apt-cache madison "$pkg" | awk -F'|' '{gsub(/ /, "", $2); print $2}' | sort -u); do
        dir="$out/$pkg/$(echo "$v" | tr ':+~' '___')"
        [ -d "$dir" ] && continue
        (cd "$out/debs" && apt-get download -q "$pkg=$v" >/dev/null 2>&1) || { echo "cannot download $pkg=$v" >&2; continue; }
        deb=$(ls -t "$out/debs/${pkg}_"*.deb | head -1)
        mkdir -p "$dir"
        dpkg -x "$deb" "$dir"
        rm -f "$deb"
    done
done
echo "$out"
