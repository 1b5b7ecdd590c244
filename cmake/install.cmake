# Installing moesim like a tool (issue #27 item 2): `cmake --install build [--prefix P]`
# and `cpack -G DEB` (a Debian package) put
#   bin/moesim                                   the program
#   share/man/man1/moesim.1                      its manual, generated from its --help texts
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

set(moesim_man ${PROJECT_BINARY_DIR}/man/moesim.1)
add_custom_command(
  OUTPUT ${moesim_man}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
  COMMAND ${CMAKE_COMMAND} -DMOESIM=$<TARGET_FILE:moesim> -DVERSION=${PROJECT_VERSION} -DOUT=${moesim_man}
          -P ${PROJECT_SOURCE_DIR}/cmake/man_page.cmake
  DEPENDS moesim ${PROJECT_SOURCE_DIR}/cmake/man_page.cmake
  COMMENT "Generating moesim(1) from the --help texts"
  VERBATIM)
add_custom_target(moesim_man ALL DEPENDS ${moesim_man})
install(FILES ${moesim_man} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

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
set(CPACK_PACKAGE_CONTACT "moesim developers <moesim@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "performance model of Mixture-of-Experts LLM training (step time, TFLOPS/GPU, MFU, memory)")
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
