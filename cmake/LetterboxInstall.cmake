# Install rules and the package config (STYLE 2.4): one export file per component, a config that
# finds each requested component's dependencies only when that component is asked for.
include(CMakePackageConfigHelpers)

set(LETTERBOX_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/letterbox"
    CACHE STRING "Where to install letterboxConfig.cmake, relative to the install prefix")
mark_as_advanced(LETTERBOX_INSTALL_CMAKEDIR)

# Both file sets of each target (CMakeLists.txt, letterbox_add_headers): the headers and their
# impl/ definitions.
function(letterbox_install_target target export)
    set(sets FILE_SET HEADERS)
    get_target_property(names ${target} INTERFACE_HEADER_SETS)
    if("impl" IN_LIST names)
        list(APPEND sets FILE_SET impl)
    endif()
    install(TARGETS ${target} EXPORT ${export} ${sets})
endfunction()

letterbox_install_target(letterbox letterbox-targets)
install(EXPORT letterbox-targets
        NAMESPACE letterbox::
        FILE letterbox-targets.cmake
        DESTINATION "${LETTERBOX_INSTALL_CMAKEDIR}")

foreach(name IN LISTS LETTERBOX_ENABLED_COMPONENTS)
    letterbox_install_target(letterbox_${name} letterbox-${name}-targets)
    install(EXPORT letterbox-${name}-targets
            NAMESPACE letterbox::
            FILE letterbox-${name}-targets.cmake
            DESTINATION "${LETTERBOX_INSTALL_CMAKEDIR}")
endforeach()

# The component table, written into the config: the known components and, for each, the
# find_package() arguments of its dependencies.
set(LETTERBOX_CONFIG_COMPONENT_TABLE "set(_letterbox_components ${LETTERBOX_COMPONENTS})\n")
foreach(name IN LISTS LETTERBOX_COMPONENTS)
    set(line "set(_letterbox_${name}_packages")
    foreach(spec IN LISTS letterbox_${name}_packages)
        if(NOT spec STREQUAL "")
            string(APPEND line " [[${spec}]]")
        endif()
    endforeach()
    string(APPEND LETTERBOX_CONFIG_COMPONENT_TABLE "${line})\n")
endforeach()

configure_package_config_file(
    "${PROJECT_SOURCE_DIR}/cmake/letterboxConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/letterboxConfig.cmake"
    INSTALL_DESTINATION "${LETTERBOX_INSTALL_CMAKEDIR}")
write_basic_package_version_file(
    "${PROJECT_BINARY_DIR}/letterboxConfigVersion.cmake"
    VERSION ${PROJECT_VERSION}
    COMPATIBILITY SameMajorVersion
    ARCH_INDEPENDENT)
install(FILES "${PROJECT_BINARY_DIR}/letterboxConfig.cmake"
              "${PROJECT_BINARY_DIR}/letterboxConfigVersion.cmake"
        DESTINATION "${LETTERBOX_INSTALL_CMAKEDIR}")
