#!/bin/sh
# make docs: the DocC catalogs beside the targets (Sources/<Target>/<Target>.docc) built into static HTML under
# .build/docs/<Target>, with symbol graphs extracted from the debug build's modules (no package is fetched).
# Fails on a link that does not resolve (an article, a symbol); other DocC warnings (undocumented parameters)
# are listed in .build/docs/<Target>.diagnostics.json.
set -eu
cd "$(dirname "$0")/.."
swift build --product slicelab >/dev/null
modules=.build/debug/Modules
[ -d "$modules" ] || modules=.build/debug
flags="-I $modules -target $(uname -m)-unknown-linux-gnu -minimum-access-level public"
for include in $(pkg-config --cflags-only-I libopenjp2 hdf5-serial ompi-c libpng libdeflate); do
    flags="$flags -Xcc $include"
done
for target in Sources/C*; do
    flags="$flags -I $target"
    [ -d "$target/include" ] && flags="$flags -Xcc -I$target/include"
done
for map in .build/debug/C*.build/module.modulemap; do
    [ -f "$map" ] && flags="$flags -Xcc -fmodule-map-file=$map"
done
status=0
for catalog in Sources/*/*.docc; do
    target=$(basename "$catalog" .docc)
    graphs=.build/docs/symbol-graphs/$target
    rm -rf "$graphs" ".build/docs/$target"
    mkdir -p "$graphs"
    # shellcheck disable=SC2086
    swift symbolgraph-extract -module-name "$target" $flags -output-dir "$graphs"
    docc convert "$catalog" --additional-symbol-graph-dir "$graphs" --output-path ".build/docs/$target" \
        --transform-for-static-hosting --hosting-base-path "$target" --fallback-display-name "$target" \
        --fallback-bundle-identifier "org.slicelab.$target" \
        --diagnostics-file ".build/docs/$target.diagnostics.json" >/dev/null 2>&1
    broken=$(python3 - ".build/docs/$target.diagnostics.json" <<'PY'
import json, sys
for d in json.load(open(sys.argv[1]))["diagnostics"]:
    if "doesn't exist" in d["summary"] or "can't be resolved" in d["summary"]:
        source = d.get("source", "").replace("file://", "")
        line = d.get("range", {}).get("start", {}).get("line", "?")
        print(f"{source}:{line}: {d['summary']}")
PY
)
    if [ -n "$broken" ]; then
        echo "$broken" >&2
        status=1
    fi
    echo "docs: $target -> .build/docs/$target/documentation/$(echo "$target" | tr 'A-Z' 'a-z')/index.html"
done
exit $status
