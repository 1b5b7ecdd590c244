# Generates moesim(1) from the binary's own --help texts (the program's and each
# subcommand's), so that the manual never drifts from the options. Invoked at build time:
#   cmake -DMOESIM=build/moesim -DVERSION=0.1.0 -DOUT=build/man/moesim.1 -P this
execute_process(COMMAND ${MOESIM} --help OUTPUT_VARIABLE top RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "moesim --help failed (${rc})")
endif()
# The subcommands: the lines of the SUBCOMMANDS section, "  NAME  help".
string(REPLACE "${MOESIM}" "moesim" top "${top}")
string(REGEX MATCH "Subcommands:\n(.*)" sub "${top}")
string(REGEX MATCHALL "\n  [a-z]+ " names "\n${CMAKE_MATCH_1}")
# roff: a backslash is written \e, and a line starting with . or ' is escaped with \&.
function(roff out text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "\n([.'])" "\n\\\\&\\1" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
roff(top_roff "${top}")
set(page ".TH MOESIM 1 \"\" \"moesim ${VERSION}\" \"User Commands\"\n")
string(APPEND page ".SH NAME\nmoesim \\- predict step time, throughput and memory of Mixture-of-Experts LLM training\n")
string(APPEND page ".SH SYNOPSIS\n.B moesim\n\\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR]\n")
string(APPEND page ".SH DESCRIPTION\nmoesim replays per-layer op graphs of a training run (a scenario file) through a "
                   "discrete-event simulation of the host CPU, the GPU streams and the interconnect. The scenario "
                   "and sweep formats are in /usr/share/doc/moesim/docs/SCENARIO_FORMAT.md and `moesim schema`; "
                   "shipped scenarios in /usr/share/moesim/scenarios.\n.PP\n.nf\n${top_roff}\n.fi\n")
string(APPEND page ".SH SUBCOMMANDS\n")
foreach(n IN LISTS names)
  string(STRIP "${n}" n)
  execute_process(COMMAND ${MOESIM} ${n} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "moesim ${n} --help failed (${rc})")
  endif()
  string(REPLACE "${MOESIM}" "moesim" help "${help}")
  roff(help_roff "${help}")
  string(APPEND page ".SS ${n}\n.nf\n${help_roff}\n.fi\n")
endforeach()
string(APPEND page ".SH EXIT STATUS\n0 success; 1 a check failed (validate beyond a tolerance or a baseline); "
                   "2 bad input or usage, with one message naming the file and the JSON path.\n")
file(WRITE "${OUT}.tmp" "${page}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
