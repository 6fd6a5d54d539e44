# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""Writes Sources/CountdownServer/OpenAPIDocument.swift from docs/openapi.yaml: the document as
compact JSON in a Swift string, which `countdown serve` answers at GET /openapi.json.

    python3 Tests/openapi/generate.py          # rewrite the Swift file
    python3 Tests/openapi/generate.py --check  # exit 1 if it differs from the YAML (CI)
"""

import json
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
YAML = os.path.join(ROOT, "docs", "openapi.yaml")
SWIFT = os.path.join(ROOT, "Sources", "CountdownServer", "OpenAPIDocument.swift")


def swift_source():
    with open(YAML) as f:
        document = yaml.safe_load(f)
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False, sort_keys=False)
    assert '"####' not in text
    lines = [text[i:i + 96] for i in range(0, len(text), 96)]
    # Indented as the closing delimiter is; each line but the last ends in a raw string's
    # line continuation, so the JSON has no newline of its own.
    body = "\\####\n".join("  " + line for line in lines)
    return (
        "// SPDX-License-Identifier: Apache-2.0\n"
        "// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)\n"
        "// Generated from docs/openapi.yaml by Tests/openapi/generate.py: edit the YAML and run it.\n"
        "// swift-format-ignore-file\n\n"
        "/// The HTTP API's OpenAPI 3.1 document (docs/openapi.yaml) as JSON, served at\n"
        "/// `GET /openapi.json`.\n"
        "enum OpenAPIDocument {\n"
        "  static let json = ####\"\"\"\n"
        + body + "\n"
        "  \"\"\"####\n"
        "}\n")


def main():
    source = swift_source()
    if "--check" in sys.argv:
        with open(SWIFT) as f:
            if f.read() != source:
                sys.exit("%s is not docs/openapi.yaml's: run python3 Tests/openapi/generate.py"
                         % os.path.relpath(SWIFT, ROOT))
        return
    with open(SWIFT, "w") as f:
        f.write(source)


if __name__ == "__main__":
    main()
