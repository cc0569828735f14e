# Manual pages of every program the package installs, gzipped (gzip -9n) into
# share/man/man1 and man8. systemd/CMakeLists.txt includes this file at the
# end of the top level (cmake_language(DEFER)), once every program's target
# is known, so that a program this build leaves out (gc-info, the Slurm
# sweep, ...) has no page either. It runs in the top level's scope: paths
# are spelled out (man_src, man_out).
#
# The pages are made at build time from the programs' own --help by Debian's
# help2man (help2man.sh); NAME's one line and the sections --help does not
# have (FILES, ENVIRONMENT, SEE ALSO) come from <program>.h2m. The two
# programs without a --help to read have pages written by hand (*.in).
find_program(HELP2MAN_PROGRAM help2man)
if(NOT HELP2MAN_PROGRAM)
  message(WARNING "help2man not found (scripts/install-deps.sh installs it): "
                  "no manual pages; the .deb will not be lintian-clean")
  return()
endif()

set(man_src ${CMAKE_CURRENT_LIST_DIR})
set(man_out ${CMAKE_BINARY_DIR}/man)
file(MAKE_DIRECTORY ${man_out})
set(vipu_man_pages)

# The pages' date is the package's: that of the changelog's latest entry.
set(man_date_env)
find_program(DPKG_PARSECHANGELOG_PROGRAM dpkg-parsechangelog)
if(DPKG_PARSECHANGELOG_PROGRAM)
  execute_process(
    COMMAND ${DPKG_PARSECHANGELOG_PROGRAM} -l ${CMAKE_SOURCE_DIR}/systemd/changelog -S Timestamp
    OUTPUT_VARIABLE changelog_epoch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changelog_epoch MATCHES "^[0-9]+$")
    set(man_date_env SOURCE_DATE_EPOCH=${changelog_epoch})
  endif()
endif()

# A page from --help. ARGN: --commands for a tree of subcommands (every leaf
# command's options go into a COMMANDS section).
function(vipu_help2man_page target section whatis)
  if(NOT TARGET ${target})
    return()
  endif()
  set(page ${man_out}/${target}.${section}.gz)
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E env ${man_date_env}
            sh ${man_src}/help2man.sh ${page} ${section}
            $<TARGET_FILE:${target}> ${PROJECT_VERSION} ${whatis}
            ${man_src}/${target}.h2m ${ARGN}
    DEPENDS ${target} ${man_src}/help2man.sh ${man_src}/${target}.h2m
    COMMENT "Manual page ${target}(${section}) from ${target} --help"
    VERBATIM)
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
  set(vipu_man_pages ${vipu_man_pages} ${page} PARENT_SCOPE)
endfunction()

# A page written by hand: <name>.<section>.in, the version filled in.
function(vipu_written_page name section)
  set(page ${man_out}/${name}.${section}.gz)
  configure_file(${man_src}/${name}.${section}.in ${man_out}/${name}.${section} @ONLY)
  add_custom_command(OUTPUT ${page}
    COMMAND gzip -9n -c ${man_out}/${name}.${section} > ${page}
    DEPENDS ${man_out}/${name}.${section}
    COMMENT "Manual page ${name}(${section})")
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
  set(vipu_man_pages ${vipu_man_pages} ${page} PARENT_SCOPE)
endfunction()

vipu_help2man_page(vipu 1 "the V-IPU user command line" --commands)
vipu_help2man_page(vipu-admin 1 "the V-IPU administration command line" --commands)
vipu_help2man_page(vipu-server 1 "the V-IPU controller")
vipu_help2man_page(vipu-agent 1 "simulated IPU-Machines for vipu-server")
vipu_help2man_page(poprun 1 "launch an application's instances on a V-IPU partition")
vipu_help2man_page(ipu-model 1 "offline step-time predictor for IPU pods" --commands)
vipu_help2man_page(vipu-plan 1 "capacity planning: replay a job trace on a simulated pod" --commands)
vipu_help2man_page(gc-info 1 "list the IPU devices of a partition as Poplar sees them")
vipu_help2man_page(poptorch-pod 1 "the link of a PopTorch program to the simulated pod's IPUs")
vipu_help2man_page(popdist_sample_train 1 "BERT pre-training sample for poprun and popdist")
if(TARGET popdist_env_dump)
  vipu_written_page(popdist_env_dump 1)
endif()
# slurm/ installs the sweep together with the plugin.
if(TARGET vipu_spank)
  vipu_written_page(vipu-slurm-sweep 8)
endif()

add_custom_target(man_pages ALL DEPENDS ${vipu_man_pages})
