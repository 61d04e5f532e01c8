#!/usr/bin/env bash
# Install the document libraries of the two tuning-only answer sets: large
# manuals like the held-out test sets', so that retrieval and answers over a
# manual of a thousand pages can be tuned without reading a test set.
#
#   postgres_doc_en      PostgreSQL 15 manual, English (Debian: postgresql-doc-15)
#                        /usr/share/doc/postgresql-doc-15/html      1169 HTML pages
#   debian_handbook_zh   The Debian Administrator's Handbook, Simplified Chinese
#                        (Debian: debian-handbook; partly untranslated English)
#                        /usr/share/doc/debian-handbook/html/zh-CN   127 HTML pages
#
#     sudo bash bench/answers/build_tuning_sets.sh          # install + check
#     bash bench/answers/build_tuning_sets.sh --check       # check only
set -euo pipefail

EN=/usr/share/doc/postgresql-doc-15/html
ZH=/usr/share/doc/debian-handbook/html/zh-CN

if [[ "${1:-}" != "--check" ]]; then
    if [[ $(id -u) -ne 0 ]]; then
        echo "installing needs root (or run with --check)" >&2
        exit 2
    fi
    apt-get update
    apt-get install -y --no-install-recommends postgresql-doc-15 debian-handbook
fi

# shellcheck source=check_library.sh
source "$(dirname "$0")/check_library.sh"
check "$EN" 1169 postgres_doc_en
check "$ZH" 127 debian_handbook_zh
exit $status
