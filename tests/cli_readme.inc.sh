# Sourced by tests/cli_test.sh (ok, bad, $HPJ, $TMP): the README cannot drift
# from the code. Its "API example" is examples/tour.c, which make builds and
# the tests run, shown verbatim; and every `./hpjepa COMMAND` in its code
# blocks names a command the program accepts.

# readme_api_block FILE: the first ```c block under the heading
# "## API example" (up to the next "## " heading), exit status 1 if none
readme_api_block() {
    awk '
        s == 0 && $0 == "## API example" { s = 1; next }
        s == 1 && /^## /                 { exit }
        s == 1 && $0 == "```c"           { s = 2; next }
        s == 2 && $0 == "```"            { s = 3; exit }
        s == 2                           { print }
        END                              { exit s == 3 ? 0 : 1 }
    ' "$1"
}

# readme_commands FILE: "CMD" or "CMD KIND" for every ./hpjepa line in a
# fenced code block (KIND for bench and plot, each of a|b|c alternatives)
readme_commands() {
    awk '/^```/ { inb = !inb; next } inb { print }' "$1" |
        grep -oE '\./hpjepa [a-z]+( [a-z|]+)?' |
        while read -r _ cmd kinds; do
            case $cmd in
                bench|plot) [ -n "$kinds" ] || { echo "$cmd"; continue; }
                            tr '|' '\n' <<<"$kinds" | sed "s/^/$cmd /" ;;
                *) echo "$cmd" ;;
            esac
        done | sort -u
}

if [ -f README.md ]; then
    if ! readme_api_block README.md >"$TMP/readme_tour.c"; then
        bad "README: a \`\`\`c block under '## API example'" "none found"
    elif cmp -s "$TMP/readme_tour.c" examples/tour.c; then
        ok "README: the API example is examples/tour.c verbatim ($(wc -l <examples/tour.c) lines)"
    else
        bad "README: the API example is examples/tour.c verbatim" \
            "$(diff "$TMP/readme_tour.c" examples/tour.c | head -n 4 | tr '\n' ' ')"
    fi

    readme_commands README.md >"$TMP/readme_cmds"
    n_cmds=$(wc -l <"$TMP/readme_cmds")
    unknown=""
    while read -r c; do
        # shellcheck disable=SC2086
        "$HPJ" $c --help >/dev/null 2>&1 || unknown="$unknown '$c'"
    done <"$TMP/readme_cmds"
    if [ "$n_cmds" -ge 1 ] && [ -z "$unknown" ]; then
        ok "README: the $n_cmds commands its code blocks show exist (COMMAND --help exits 0)"
    else
        bad "README: the commands its code blocks show exist" "found $n_cmds; unknown:$unknown"
    fi
fi
