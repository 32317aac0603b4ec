# cmake -P run_install_test.cmake: see tests/install/CMakeLists.txt for the variables.
cmake_minimum_required(VERSION 3.25)

foreach(var LETTERBOX_SOURCE_DIR LETTERBOX_BUILD_DIR WORK_DIR CXX_COMPILER)
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
        message(FATAL_ERROR "run_install_test.cmake: ${var} is not set")
    endif()
endforeach()
if("${CONFIG}" STREQUAL "")
    set(CONFIG Debug)
endif()
set(prefix "${WORK_DIR}/prefix")
set(consumers "${LETTERBOX_SOURCE_DIR}/tests/install")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# step(<name> [MUST_FAIL] COMMAND ...): runs a command, prints its output if it does the wrong
# thing, and stores the output in step_output.
function(step name)
    cmake_parse_arguments(PARSE_ARGV 1 arg "MUST_FAIL" "" "COMMAND")
    message(STATUS "install test: ${name}")
    execute_process(COMMAND ${arg_COMMAND} RESULT_VARIABLE result OUTPUT_VARIABLE output
                    ERROR_VARIABLE output)
    set(step_output "${output}" PARENT_SCOPE)
    if(arg_MUST_FAIL AND result EQUAL 0)
        message(FATAL_ERROR "install test: '${name}' succeeded but must fail:\n${output}")
    elseif(NOT arg_MUST_FAIL AND NOT result EQUAL 0)
        message(FATAL_ERROR "install test: '${name}' failed (${result}):\n${output}")
    endif()
endfunction()

set(configure_args
    -G "${GENERATOR}"
    "-DCMAKE_BUILD_TYPE=${CONFIG}"
    "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_PREFIX_PATH=${prefix}")
if(NOT "${CXX_FLAGS_CONFIG}" STREQUAL "")
    string(TOUPPER "${CONFIG}" config_upper)
    list(APPEND configure_args "-DCMAKE_CXX_FLAGS_${config_upper}=${CXX_FLAGS_CONFIG}")
endif()
if(NOT "${COMPILER_LAUNCHER}" STREQUAL "")
    list(APPEND configure_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${COMPILER_LAUNCHER}")
endif()

# 1. Install.
step("install into ${prefix}"
     COMMAND "${CMAKE_COMMAND}" --install "${LETTERBOX_BUILD_DIR}" --prefix "${prefix}"
             --config "${CONFIG}")
foreach(file include/letterbox/version.hpp include/letterbox/testing/seed.hpp
             share/cmake/letterbox/letterboxConfig.cmake
             share/cmake/letterbox/letterboxConfigVersion.cmake
             share/cmake/letterbox/letterbox-targets.cmake
             share/cmake/letterbox/letterbox-testing-targets.cmake)
    if(NOT EXISTS "${prefix}/${file}")
        message(FATAL_ERROR "install test: ${prefix}/${file} was not installed")
    endif()
endforeach()

# 2. find_package consumer.
step("configure find_package consumer"
     COMMAND "${CMAKE_COMMAND}" -S "${consumers}/find_package" -B "${WORK_DIR}/find_package"
             ${configure_args})
step("build find_package consumer"
     COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}/find_package" --config "${CONFIG}")
step("run find_package consumer" COMMAND "${WORK_DIR}/find_package/bin/consumer")
if(NOT step_output MATCHES "letterbox 0\\.1\\.0 via find_package")
    message(FATAL_ERROR "install test: unexpected find_package consumer output:\n${step_output}")
endif()
# With the sqlite component installed, the consumer also opened a database through it.
string(REPLACE "," ";" _not_installed "${NOT_INSTALLED_COMPONENTS}")
if(NOT "sqlite" IN_LIST _not_installed AND NOT step_output MATCHES "sqlite store: open")
    message(FATAL_ERROR "install test: the find_package consumer did not use letterbox::sqlite:\n${step_output}")
endif()

# With the postgres component installed, the consumer tried a server through it (none listens
# where it looks: the typed error of an unreachable server is the proof).
if(NOT "postgres" IN_LIST _not_installed AND
   NOT step_output MATCHES "postgres store: the connection to the store's database server was lost")
    message(FATAL_ERROR "install test: the find_package consumer did not use letterbox::postgres:\n${step_output}")
endif()

# 3. Components that must fail.
# The getting-started project of docs/getting-started.md, built as the guide says against the
# installed package (it needs the sqlite component).
if(NOT "sqlite" IN_LIST _not_installed)
    step("configure the getting-started project"
         COMMAND "${CMAKE_COMMAND}" -S "${LETTERBOX_SOURCE_DIR}/examples/getting_started"
                 -B "${WORK_DIR}/getting_started" ${configure_args})
    step("build the getting-started project"
         COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}/getting_started" --config "${CONFIG}")
    set(worker "${WORK_DIR}/getting_started/orders_worker")
    if(NOT EXISTS "${worker}")
        set(worker "${WORK_DIR}/getting_started/${CONFIG}/orders_worker") # multi-config
    endif()
    step("run the getting-started project" COMMAND "${worker}")
    if(NOT step_output MATCHES "shipments: 2 \\(orders 1 and 2, once each\\); duplicates absorbed: 1")
        message(FATAL_ERROR "install test: unexpected getting-started output:\n${step_output}")
    endif()
endif()

step("find_package(letterbox COMPONENTS nonexistent) must fail" MUST_FAIL
     COMMAND "${CMAKE_COMMAND}" -S "${consumers}/missing_component"
             -B "${WORK_DIR}/missing_nonexistent" ${configure_args}
             -DLETTERBOX_COMPONENT=nonexistent)
if(NOT step_output MATCHES "'nonexistent' is not a letterbox component")
    message(FATAL_ERROR "install test: the unknown-component error does not say why:\n${step_output}")
endif()
string(REPLACE "," ";" not_installed "${NOT_INSTALLED_COMPONENTS}")
foreach(name IN LISTS not_installed)
    string(TOUPPER "${name}" upper)
    step("find_package(letterbox COMPONENTS ${name}) must fail (not installed)" MUST_FAIL
         COMMAND "${CMAKE_COMMAND}" -S "${consumers}/missing_component"
                 -B "${WORK_DIR}/missing_${name}" ${configure_args}
                 -DLETTERBOX_COMPONENT=${name})
    if(NOT step_output MATCHES "LETTERBOX_WITH_${upper}=ON")
        message(FATAL_ERROR "install test: the not-installed error does not say what to do:\n${step_output}")
    endif()
    break() # one is enough to prove the path
endforeach()

# 4. add_subdirectory consumer.
step("configure add_subdirectory consumer"
     COMMAND "${CMAKE_COMMAND}" -S "${consumers}/add_subdirectory"
             -B "${WORK_DIR}/add_subdirectory" ${configure_args})
step("build add_subdirectory consumer"
     COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}/add_subdirectory" --config "${CONFIG}")
step("run add_subdirectory consumer" COMMAND "${WORK_DIR}/add_subdirectory/bin/consumer")
if(NOT step_output MATCHES "letterbox 0\\.1\\.0 via add_subdirectory")
    message(FATAL_ERROR "install test: unexpected add_subdirectory consumer output:\n${step_output}")
endif()

message(STATUS "install test: ok")
