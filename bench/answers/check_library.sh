# Sourced by build_test_sets.sh and build_tuning_sets.sh: check that a set's
# library is in place. Sets `status` to 1 when a library is missing or empty.
status=0
check() {  # folder, expected number of .html pages, set name
    local folder=$1 expected=$2 name=$3 count
    if [[ ! -d "$folder" ]]; then
        echo "MISSING  $name: $folder does not exist" >&2
        status=1
        return
    fi
    count=$(find "$folder" -name '*.html' -type f | wc -l)
    if [[ "$count" -eq 0 ]]; then
        echo "EMPTY    $name: no HTML pages under $folder" >&2
        status=1
    elif [[ "$count" -ne "$expected" ]]; then
        echo "WARNING  $name: $count HTML pages under $folder (expected $expected)" >&2
    else
        echo "ok       $name: $count HTML pages under $folder"
    fi
}
