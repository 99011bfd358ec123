#!/bin/sh
# Writes Sources/Gateway/OpenAPIDocument.swift from docs/openapi.yaml (the gateway serves it at
# /api/v1/openapi.yaml). Run by `make openapi` after editing the document; a test fails when the
# two differ.
set -eu
cd "$(dirname "$0")/.."
out=Sources/Gateway/OpenAPIDocument.swift
if grep -q '"""#' docs/openapi.yaml; then
    echo "docs/openapi.yaml contains the raw-string delimiter \"\"\"#; it cannot be embedded" >&2
    exit 1
fi
{
    echo '// Generated from docs/openapi.yaml by `make openapi` (scripts/embed-openapi.sh); do not edit.'
    echo 'enum OpenAPIDocument {'
    echo '    static let yaml = #"""'
    cat docs/openapi.yaml
    echo '"""#'
    echo '}'
} > "$out"
echo "wrote $out"
