# Runs shard SHARD of SHARDS of a doctest program's test cases: cmake -DTEST=program
# -DSHARD=k -DSHARDS=n -P doctest_shard.cmake. The cases are counted first (--count, under the same
# environment, so XREDUCE_TEST_QUICK's skips count too), then run as doctest numbers them, in file
# order: shard k runs cases [(k-1)*N/n + 1, k*N/n]. So ctest can run a long suite on every core
# (tests/CMakeLists.txt), and each shard's log names the cases it ran.
foreach(var TEST SHARD SHARDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "doctest_shard.cmake: -D${var}= is required")
  endif()
endforeach()
execute_process(COMMAND "${TEST}" --count --order-by=file OUTPUT_VARIABLE listing RESULT_VARIABLE counted)
string(REGEX MATCH "passing the current filters: ([0-9]+)" found "${listing}")
if(NOT counted EQUAL 0 OR NOT found)
  message(FATAL_ERROR "doctest_shard.cmake: ${TEST} --count failed (${counted}):\n${listing}")
endif()
set(cases ${CMAKE_MATCH_1})
math(EXPR first "(${SHARD} - 1) * ${cases} / ${SHARDS} + 1")
math(EXPR last "${SHARD} * ${cases} / ${SHARDS}")
if(first GREATER last)
  message(STATUS "shard ${SHARD} of ${SHARDS}: none of the ${cases} cases")
  return()
endif()
message(STATUS "shard ${SHARD} of ${SHARDS}: cases ${first} to ${last} of ${cases}")
execute_process(COMMAND "${TEST}" --order-by=file --first=${first} --last=${last} RESULT_VARIABLE failed)
if(NOT failed EQUAL 0)
  message(FATAL_ERROR "shard ${SHARD} of ${SHARDS} failed (${failed})")
endif()
