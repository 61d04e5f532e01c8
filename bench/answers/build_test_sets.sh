#!/usr/bin/env bash
# Install the document libraries of the two held-out answer sets and check
# that they are in place:
#
#   gimp_help_en  GIMP 2.10 user manual, English   (Debian: gimp-help-en)
#                 /usr/share/gimp/2.0/help/en             685 HTML pages
#   libreoffice_help_zh  LibreOffice help, Simplified Chinese (Debian: libreoffice-help-zh-cn)
#                 /usr/share/libreoffice/help/zh-CN      2561 HTML pages
#
# libreoffice_help_zh is over LibreOffice, not GIMP: Debian's gimp-help-zh-cn is almost entirely
# untranslated English, so the Chinese set uses LibreOffice's help instead
# (see the set's description).
#
# Both sets are TEST sets: never tune code on them.
#
#     sudo bash bench/answers/build_test_sets.sh          # install + check
#     bash bench/answers/build_test_sets.sh --check       # check only
#
# The page counts are those of Debian bookworm (gimp-help-en 2.10.34-2,
# libreoffice-help-zh-cn 4:7.4.7); another release may differ, which is
# reported as a warning, not an error: bench/answers/check_sets.py tells
# whether the judged pages and match strings are still there.
set -euo pipefail

EN=/usr/share/gimp/2.0/help/en
ZH=/usr/share/libreoffice/help/zh-CN

if [[ "${1:-}" != "--check" ]]; then
    if [[ $(id -u) -ne 0 ]]; then
        echo "installing needs root (or run with --check)" >&2
        exit 2
    fi
    apt-get update
    apt-get install -y gimp-help-en
    # the help package alone; recommends would pull in the whole office suite
    apt-get install -y --no-install-recommends libreoffice-help-zh-cn
fi

# shellcheck source=check_library.sh
source "$(dirname "$0")/check_library.sh"
check "$EN" 685 gimp_help_en
check "$ZH" 2561 libreoffice_help_zh

if [[ $status -eq 0 ]]; then
    here=$(cd "$(dirname "$0")" && pwd)
    echo "validate the sets with:"
    echo "  .venv/bin/python bench/answers/check_sets.py --strict $here/gimp_help_en.json $here/libreoffice_help_zh.json"
fi
exit $status
