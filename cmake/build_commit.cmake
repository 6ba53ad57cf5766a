# Writes OUT (a header defining CONDSIM_GIT_COMMIT) with the source tree's current commit, and
# only when it changed: run at every build, so summary.json and output files name the commit
# the binary was built from, not the one at configure time.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit unknown)
endif()
set(text "// Generated at build time by cmake/build_commit.cmake.\n#pragma once\n#define CONDSIM_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
