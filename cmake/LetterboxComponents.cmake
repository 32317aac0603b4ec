# The optional components of letterbox, in one table (STYLE 2.4).
#
# A component is a folder include/letterbox/<name>/ plus an umbrella include/letterbox/<name>.hpp,
# a target letterbox::<name> (core + the component's dependencies), an option LETTERBOX_WITH_<NAME>
# (default OFF) and an export file letterbox-<name>-targets.cmake. Adding a component is one
# letterbox_declare_component() call below; everything else (targets, install, package config,
# dependency-direction check, ODR test, test/example filtering) reads this table.
#
# letterbox_declare_component(<name>
#     PACKAGES <"find_package arguments"...>   e.g. "Catch2 2" rapidcheck; replayed by the config
#     LINK     <targets...>                     what letterbox::<name> links besides the core
#     DEFINES  <definitions...>                 compile definitions users of letterbox::<name> get
#     EXTERNAL_INCLUDES <prefixes...>           third-party headers only this component may include
#                                               (checked by tests/tools/check_dependency_direction.sh)
#     [NEEDS_SERVICE]                           examples using it need a running service (a
#                                               broker): they get the ctest label `integration`
#     DESCRIPTION <text>)
#
# Tests never take a label from the components they use: a test's label is its folder's
# (tests/CMakeLists.txt), so tests/unit/amqp/** stays `unit` and tests/property/amqp_* stays
# `property` however the component is declared, and only tests/integration/ (or a test tagged
# [integration]) is `integration`. A component's codec or parser needs no service to be tested.

set(LETTERBOX_COMPONENTS "")

function(letterbox_declare_component name)
    cmake_parse_arguments(PARSE_ARGV 1 arg "NEEDS_SERVICE" "DESCRIPTION"
                          "PACKAGES;LINK;DEFINES;EXTERNAL_INCLUDES")
    string(TOUPPER "${name}" upper)
    set(LETTERBOX_COMPONENTS ${LETTERBOX_COMPONENTS} ${name} PARENT_SCOPE)
    set(letterbox_${name}_packages "${arg_PACKAGES}" PARENT_SCOPE)
    set(letterbox_${name}_link "${arg_LINK}" PARENT_SCOPE)
    set(letterbox_${name}_defines "${arg_DEFINES}" PARENT_SCOPE)
    set(letterbox_${name}_external_includes "${arg_EXTERNAL_INCLUDES}" PARENT_SCOPE)
    set(letterbox_${name}_needs_service ${arg_NEEDS_SERVICE} PARENT_SCOPE)
    option(LETTERBOX_WITH_${upper} "Build the letterbox::${name} component (${arg_DESCRIPTION})" OFF)
endfunction()

letterbox_declare_component(testing
    PACKAGES "Catch2 2" rapidcheck
    LINK Catch2::Catch2 rapidcheck rapidcheck_catch
    # Failpoints (include/letterbox/failpoint.hpp) are compiled into test programs only.
    DEFINES LETTERBOX_FAILPOINTS
    EXTERNAL_INCLUDES catch2/ rapidcheck
    DESCRIPTION "conformance suites, archetypes, simulation; needs Catch2 v2 and RapidCheck")
letterbox_declare_component(sqlite
    PACKAGES SQLite3
    LINK SQLite::SQLite3
    EXTERNAL_INCLUDES sqlite3.h
    DESCRIPTION "SQLite outbox and inbox stores; needs SQLite3")
letterbox_declare_component(postgres
    PACKAGES PostgreSQL
    LINK PostgreSQL::PostgreSQL
    EXTERNAL_INCLUDES libpq-fe.h
    NEEDS_SERVICE
    DESCRIPTION "PostgreSQL outbox and inbox stores shared by many processes; needs libpq; its integration tests and examples need a PostgreSQL server")
letterbox_declare_component(amqp
    PACKAGES Threads OpenSSL
    LINK Threads::Threads OpenSSL::SSL OpenSSL::Crypto
    EXTERNAL_INCLUDES openssl/
    NEEDS_SERVICE
    DESCRIPTION "AMQP 0-9-1 transport on Boost.Asio (TLS with OpenSSL); its integration tests and examples need a RabbitMQ broker")
letterbox_declare_component(ops
    PACKAGES ""
    LINK ""
    EXTERNAL_INCLUDES boost/beast
    DESCRIPTION "HTTP health/metrics endpoint on Boost.Beast")

# letterbox_find_component_packages(<name>): find_package(... REQUIRED) for each dependency. A
# macro, so that what the packages' configs set (Catch2 adds its module dir to
# CMAKE_MODULE_PATH, for include(Catch)) stays visible.
macro(letterbox_find_component_packages _letterbox_name)
    foreach(_letterbox_spec IN LISTS letterbox_${_letterbox_name}_packages)
        if(NOT _letterbox_spec STREQUAL "")
            separate_arguments(_letterbox_args UNIX_COMMAND "${_letterbox_spec}")
            find_package(${_letterbox_args} REQUIRED)
        endif()
    endforeach()
    unset(_letterbox_spec)
    unset(_letterbox_args)
endmacro()

# letterbox_components_used_by(<out-var> <source-file>): the components whose headers the file
# includes (<letterbox/<name>.hpp> or <letterbox/<name>/...>). Used to build a test, example or
# benchmark only when its components are enabled, and to link it to them.
function(letterbox_components_used_by out file)
    file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]letterbox/")
    set(used "")
    foreach(name IN LISTS LETTERBOX_COMPONENTS)
        foreach(line IN LISTS includes)
            if(line MATCHES "[<\"]letterbox/${name}(\\.hpp|/)")
                list(APPEND used ${name})
                break()
            endif()
        endforeach()
    endforeach()
    set(${out} "${used}" PARENT_SCOPE)
endfunction()

# letterbox_components_usable(<out-var> <components...>): TRUE if every listed component is
# enabled in this build.
function(letterbox_components_usable out)
    set(ok TRUE)
    foreach(name IN LISTS ARGN)
        if(NOT TARGET letterbox::${name})
            set(ok FALSE)
        endif()
    endforeach()
    set(${out} ${ok} PARENT_SCOPE)
endfunction()

# letterbox_components_need_service(<out-var> <components...>): TRUE if any needs a service.
# Used for examples only (examples/CMakeLists.txt); see NEEDS_SERVICE above.
function(letterbox_components_need_service out)
    set(needs FALSE)
    foreach(name IN LISTS ARGN)
        if(letterbox_${name}_needs_service)
            set(needs TRUE)
        endif()
    endforeach()
    set(${out} ${needs} PARENT_SCOPE)
endfunction()
