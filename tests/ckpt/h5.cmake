# tests/ckpt/h5.cmake — the parallel HDF5 checkpoint (framework/ckpt/h5_*), included from
# tests/ckpt/CMakeLists.txt. MPI runs follow
# tests/dist/CMakeLists.txt's conventions (own copies: tests/ckpt is added before tests/dist).
set(FARTHING_H5_TEST_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
set(FARTHING_H5_OVERSUBSCRIBE "")
if(MPIEXEC_MAX_NUMPROCS LESS 3)
  set(FARTHING_H5_OVERSUBSCRIBE --oversubscribe)
endif()

add_executable(test_h5_checkpoint test_h5_checkpoint.cpp ${PROJECT_SOURCE_DIR}/tests/dist/mpi_test_main.cpp)
target_link_libraries(test_h5_checkpoint PRIVATE farthing_test_support GTest::gtest)
add_test(NAME test_h5_checkpoint_np1 COMMAND test_h5_checkpoint)
set_tests_properties(test_h5_checkpoint_np1 PROPERTIES LABELS "unit" TIMEOUT 120)
foreach(np 2 3)
  set(flags ${MPIEXEC_NUMPROC_FLAG} ${np})
  if(np GREATER MPIEXEC_MAX_NUMPROCS)
    list(APPEND flags --oversubscribe)
  endif()
  add_test(NAME test_h5_checkpoint_np${np}
           COMMAND ${MPIEXEC_EXECUTABLE} ${flags} $<TARGET_FILE:test_h5_checkpoint>)
  set_tests_properties(test_h5_checkpoint_np${np} PROPERTIES LABELS "mpi" TIMEOUT 120
                       ENVIRONMENT "${FARTHING_H5_TEST_ENV}" PROCESSORS ${np})
endforeach()

add_executable(h5_ckpt_driver h5_ckpt_driver.cpp)
target_link_libraries(h5_ckpt_driver PRIVATE farthing_framework)
add_test(NAME test_h5_reshard
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_h5_reshard.sh ${MPIEXEC_EXECUTABLE}
                 $<TARGET_FILE:h5_ckpt_driver> ${FARTHING_H5_OVERSUBSCRIBE})
set_tests_properties(test_h5_reshard PROPERTIES LABELS "mpi" TIMEOUT 180
                     ENVIRONMENT "${FARTHING_H5_TEST_ENV}" PROCESSORS 3)
add_test(NAME test_h5_crash
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_h5_crash.sh ${MPIEXEC_EXECUTABLE}
                 $<TARGET_FILE:h5_ckpt_driver> 2)
set_tests_properties(test_h5_crash PROPERTIES LABELS "mpi" TIMEOUT 180
                     ENVIRONMENT "${FARTHING_H5_TEST_ENV}" PROCESSORS 2)
add_test(NAME test_h5_faults
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_h5_faults.sh ${MPIEXEC_EXECUTABLE}
                 $<TARGET_FILE:h5_ckpt_driver> 2 ${FARTHING_H5_OVERSUBSCRIBE})
set_tests_properties(test_h5_faults PROPERTIES LABELS "mpi" TIMEOUT 300
                     ENVIRONMENT "${FARTHING_H5_TEST_ENV}" PROCESSORS 2)
