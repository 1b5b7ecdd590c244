# Installing moesim like a tool (issue #27 item 2): `cmake --install build [--prefix P]`
# and `cpack -G DEB` (a Debian package) put
#   bin/moesim                                   the program
#   share/man/man1/moesim.1.gz                   its manual, generated from its --help texts
#   share/moesim/scenarios, share/moesim/schema  the shipped scenarios, presets and JSON Schemas
#   share/doc/moesim/                            README.md and docs/
#   the Python module (`import moesim`)          where the interpreter searches for the
#                                                prefix: lib/python3/dist-packages under /usr
#                                                (Debian's), lib/python3.X/dist-packages under
#                                                /usr/local, lib/python3.X/site-packages else
# The presets and calibration profiles are compiled into the binary and the module; the
# files are installed for reading and as examples.
include(GNUInstallDirs)

install(TARGETS moesim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The manual and the changelog compressed as Debian's policy asks (gzip -9n: no name or
# time stamp inside, so the package is reproducible); man(1) reads .gz as well.
set(moesim_man ${PROJECT_BINARY_DIR}/man/moesim.1)
add_custom_command(
  OUTPUT ${moesim_man}.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
  COMMAND ${CMAKE_COMMAND} -DMOESIM=$<TARGET_FILE:moesim> -DVERSION=${PROJECT_VERSION} -DOUT=${moesim_man}
          -P ${PROJECT_SOURCE_DIR}/cmake/man_page.cmake
  COMMAND gzip -9nf ${moesim_man}
  DEPENDS moesim ${PROJECT_SOURCE_DIR}/cmake/man_page.cmake
  COMMENT "Generating moesim(1) from the --help texts"
  VERBATIM)
# Who answers for the package: a distributor sets it (-DMOESIM_PACKAGE_MAINTAINER=...); the
# default is a placeholder at a reserved domain (RFC 2606), not an address that answers.
set(MOESIM_PACKAGE_MAINTAINER "moesim developers <moesim@example.org>"
    CACHE STRING "the Debian package's Maintainer and changelog signer")
set(moesim_changelog ${PROJECT_BINARY_DIR}/packaging/changelog)
configure_file(${PROJECT_SOURCE_DIR}/packaging/changelog.in ${moesim_changelog} @ONLY)
add_custom_command(
  OUTPUT ${moesim_changelog}.gz
  COMMAND gzip -9nkf ${moesim_changelog}
  DEPENDS ${moesim_changelog}
  VERBATIM)
add_custom_target(moesim_man ALL DEPENDS ${moesim_man}.gz ${moesim_changelog}.gz)
install(FILES ${moesim_man}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${moesim_changelog}.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/scenarios/ DESTINATION ${CMAKE_INSTALL_DATADIR}/moesim/scenarios)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schema/ DESTINATION ${CMAKE_INSTALL_DATADIR}/moesim/schema)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/calibration/profiles/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/moesim/calibration/profiles)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian's machine-readable copyright (the project's license and the embedded Vega runtime's).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

if(MOESIM_PYTHON)
  # Decided at install time, so that `--prefix` and CPack's /usr choose the folder the
  # interpreter searches: Debian's /usr/lib/python3/dist-packages; /usr/local's
  # lib/python3.X/dist-packages (what Debian's site.py adds); else PREFIX/lib/python3.X/
  # site-packages, the user site under ~/.local (`--prefix ~/.local`, then `import
  # moesim` as is) and a virtual environment's folder.
  install(CODE "
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      set(moesim_pydir lib/python3/dist-packages)
    elseif(CMAKE_INSTALL_PREFIX STREQUAL \"/usr/local\")
      set(moesim_pydir lib/python${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}/dist-packages)
    else()
      set(moesim_pydir lib/python${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}/site-packages)
    endif()
    file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/\${moesim_pydir}\" TYPE MODULE
         FILES \"$<TARGET_FILE:moesim_python>\")
  ")
endif()

# The Debian package: `cpack -G DEB` in the build folder. Its dependencies are the shared
# libraries the binary and the module link (dpkg-shlibdeps, from dpkg-dev), and python3
# for the module.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME moesim)
set(CPACK_PACKAGE_VENDOR "moesim developers")
set(CPACK_PACKAGE_CONTACT "${MOESIM_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "performance model of Mixture-of-Experts LLM training")
set(CPACK_PACKAGE_DESCRIPTION
    "moesim is a discrete-event simulator of Mixture-of-Experts training on
GPU clusters (H100, H800, B200, GB200 and GB300 NVL72). From a scenario
(cluster, model, parallel layout, framework settings) it predicts step
time, TFLOPS per GPU, MFU and memory, replaying per-layer op graphs
through the host CPU, the GPU streams and the network. It validates
against published runs, sweeps and plans layouts, imports Megatron
launch scripts and writes HTML reports. The Python module is included.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(MOESIM_PYTHON)
  # The module is built for one Python: 3.X exactly (python3 (>= 3.X) alone let a newer
  # python3 in, which cannot load it).
  math(EXPR moesim_py_next "${Python_VERSION_MINOR} + 1")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "python3 (>= ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}), python3 (<< ${Python_VERSION_MAJOR}.${moesim_py_next})")
endif()
set(CPACK_STRIP_FILES ON)
include(CPack)
