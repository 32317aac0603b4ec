#!/usr/bin/env bash
# Checks that includes only point down the layers (docs/design/layers.md, STYLE 2.4):
#
#   0. vocabulary: every header at the root of include/letterbox/ and every header under detail/
#      and topology/, except the ones listed in `not_vocabulary` below (umbrellas, models of a
#      concept, the consumer, and forwarding headers kept at an old path); a root header's
#      out-of-line part, impl/<name>.hpp, is in the layer of <name>.hpp;
#   1. concepts: every header under concepts/;
#   2. the rest of the core: every other header that belongs to no component (middleware/,
#      outbox/, inbox/, backoff/, dlq/, transport/, impl/, consumer.hpp, ...);
#   3. components: include/letterbox/<name>/ and <name>.hpp for each <name>=... argument.
#
# Rules, each reported on its own:
#   - vocabulary includes only vocabulary (of letterbox's headers);
#   - concepts include only vocabulary and concepts (plus the standard library, Boost and
#     nlohmann, like any core header);
#   - core headers include no component header and no component's third-party headers, nor
#     <sqlite3.h>, <catch2/...>, <rapidcheck...>, <boost/beast...>, <openssl/...>;
#   - a component (include/letterbox/<name>/ and <name>.hpp) includes core, itself and its own
#     third-party headers, never another component or another component's third-party headers.
# An include of <letterbox/...> is classified by the path it names, with the same rules.
#
# usage: check_dependency_direction.sh <include/letterbox> <component>=<prefix>[,<prefix>...] ...
#   e.g. check_dependency_direction.sh include/letterbox testing=catch2/,rapidcheck sqlite=sqlite3.h
# Exits 1 and lists every offending line if the direction is broken.
set -euo pipefail

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 <include/letterbox dir> <component>=<prefix>[,<prefix>...] ..." >&2
    exit 2
fi
root=${1%/}
shift

# Headers that sit where the vocabulary lives (the root, detail/, topology/) but above the
# concepts. Paths relative to include/letterbox/.
not_vocabulary=(
    letterbox.hpp                  # the core umbrella
    lint.hpp                       # umbrella: the topology lint (lint/), a layer over topology/
    src.hpp                        # the definitions of separate compilation (all layers)
    clock.hpp                      # umbrella: the clock concept and its models
    consumer.hpp                   # the consumer, a layer
    receive_endpoint.hpp           # the consumer with its layers, a layer
    request_client.hpp             # the request client, over a transport: a layer
    responder.hpp                  # the responder, a handler over a transport: a layer
    message_trail.hpp              # observes the relay's and the consumer's events: a layer
    steady_clock.hpp               # a model of `clock`
    virtual_clock.hpp              # a model of `clock`
    in_memory_unit_of_work.hpp     # a model of `unit_of_work`
    topology/async_declare_all.hpp # forwards to transport/async_declare_all.hpp
)

# Third-party headers that no core header may include, whatever the component table says.
always_forbidden_in_core=(sqlite3.h catch2/ rapidcheck boost/beast openssl/)

components=()
declare -A externals=()
for spec in "$@"; do
    name=${spec%%=*}
    components+=("$name")
    externals[$name]=${spec#*=}
done

# ERE for an #include of a header whose path starts with one of the given prefixes.
include_regex() {
    local alternatives="" prefix
    for prefix in "$@"; do
        [ -n "$prefix" ] || continue
        prefix=$(printf '%s' "$prefix" | sed 's/[][\.*^$+?(){}|]/\\&/g')
        alternatives+="${alternatives:+|}${prefix}"
    done
    [ -n "$alternatives" ] || return 1
    printf '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](%s)' "$alternatives"
}

failures=0
report() { # <rule> <grep -n output lines, prefixed with file names>
    local rule=$1 lines=$2
    [ -n "$lines" ] || return 0
    failures=$((failures + 1))
    printf 'dependency direction: %s\n' "$rule"
    printf '%s\n' "$lines" | sed 's/^/  /'
}

# scan <regex> <files...>: matching lines as file:line:text
scan() {
    local regex=$1
    shift
    [ $# -gt 0 ] || return 0
    grep -HnE -- "$regex" "$@" || true
}

# layer_of <path relative to include/letterbox>: vocabulary, concepts, layer (the rest of the core)
# or component.
layer_of() {
    local relative=$1 name
    for name in "${components[@]}"; do
        if [ "$relative" = "$name.hpp" ] || [[ $relative == "$name"/* ]]; then
            echo component
            return
        fi
    done
    for name in "${not_vocabulary[@]}"; do
        if [ "$relative" = "$name" ]; then
            echo layer
            return
        fi
    done
    case $relative in
    concepts/*) echo concepts ;;
    impl/*) layer_of "${relative#impl/}" ;; # a root header's out-of-line part: its layer
    detail/* | topology/*) echo vocabulary ;;
    */*) echo layer ;;
    *) echo vocabulary ;;
    esac
}

mapfile -t all_files < <(find "$root" -type f \( -name '*.hpp' -o -name '*.ipp' -o -name '*.h' \) | sort)

core_files=()
declare -A component_files=()
for file in "${all_files[@]}"; do
    relative=${file#"$root"/}
    owner=""
    for name in "${components[@]}"; do
        if [ "$relative" = "$name.hpp" ] || [[ $relative == "$name"/* ]]; then
            owner=$name
        fi
    done
    if [ -z "$owner" ]; then
        core_files+=("$file")
    else
        component_files[$owner]+="$file"$'\n'
    fi
done

# Core: no component headers, no optional third-party headers.
core_forbidden=("${always_forbidden_in_core[@]}")
for name in "${components[@]}"; do
    core_forbidden+=("letterbox/$name/" "letterbox/$name.hpp")
    IFS=, read -r -a prefixes <<<"${externals[$name]}"
    core_forbidden+=("${prefixes[@]}")
done
report "core headers must not include components or optional third-party headers" \
    "$(scan "$(include_regex "${core_forbidden[@]}")" "${core_files[@]}")"

# Vocabulary and concepts: no letterbox header from a layer above. Components are left to the
# rule above, so that each offending line is reported once.
letterbox_include='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]letterbox/([^>"]+)[>"]'
upward=""
vocabulary_count=0
concepts_count=0
for file in "${core_files[@]}"; do
    layer=$(layer_of "${file#"$root"/}")
    case $layer in
    vocabulary) vocabulary_count=$((vocabulary_count + 1)) ;;
    concepts) concepts_count=$((concepts_count + 1)) ;;
    *) continue ;;
    esac
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        [[ ${line#*:*:} =~ $letterbox_include ]] || continue
        target=$(layer_of "${BASH_REMATCH[1]}")
        case "$layer:$target" in
        vocabulary:vocabulary | concepts:vocabulary | concepts:concepts | *:component) ;;
        *) upward+="${upward:+$'\n'}$line   ($layer includes $target)" ;;
        esac
    done < <(grep -HnE -- "$letterbox_include" "$file" || true)
done
report "vocabulary includes only vocabulary; concepts include only vocabulary and concepts" \
    "$upward"

# Components: nothing from other components, nor their third-party headers.
for name in "${components[@]}"; do
    mapfile -t files < <(printf '%s' "${component_files[$name]:-}")
    [ ${#files[@]} -gt 0 ] || continue
    IFS=, read -r -a own <<<"${externals[$name]}"
    forbidden=()
    for other in "${components[@]}"; do
        [ "$other" != "$name" ] || continue
        forbidden+=("letterbox/$other/" "letterbox/$other.hpp")
        IFS=, read -r -a prefixes <<<"${externals[$other]}"
        for prefix in "${prefixes[@]}"; do
            # A prefix that is also one of our own (shared dependency) stays allowed.
            mine=0
            for o in "${own[@]}"; do [ "$o" != "$prefix" ] || mine=1; done
            [ $mine -eq 1 ] || forbidden+=("$prefix")
        done
    done
    for prefix in "${always_forbidden_in_core[@]}"; do
        mine=0
        for o in "${own[@]}"; do [ "$o" != "$prefix" ] || mine=1; done
        [ $mine -eq 1 ] || forbidden+=("$prefix")
    done
    report "component '$name' must include only core, itself and its own dependencies (${externals[$name]:-none})" \
        "$(scan "$(include_regex "${forbidden[@]}")" "${files[@]}")"
done

if [ $failures -ne 0 ]; then
    exit 1
fi
echo "dependency direction: ok (${#core_files[@]} core headers: ${vocabulary_count} vocabulary," \
    "${concepts_count} concepts; components: ${components[*]:-none})"
