# The sources of SessionManager (its table, step runner, checkpoints and
# installs) and everything they need (sessions, the
# store, the metrics pipeline), listed once: the server library
# (server/CMakeLists.txt) and the fuzz harness (fuzz/fuzz.cmake) both
# compile them, and a file split out of session_manager.cc used to leave
# the fuzzer unlinkable.
set(F2OBO_SESSION_SOURCES
  call_round_control.cc
  fault_points.cc
  hyperparameters.cc
  ids.cc
  metrics_pipeline.cc
  oracle_message_limits.cc
  request_bounds.cc
  checkpoints.cc
  install_checks.cc
  installs.cc
  installs_stored.cc
  installs_transfer.cc
  session_entry.cc
  session_fences.cc
  session_footprint.cc
  session_table.cc
  session_views.cc
  step_runner.cc
  step_runner_group.cc
  store/checkpoints.cc
  store/fences.cc
  store/record_sum.cc
  store/side_files.cc
  store/sqlite_session_store.cc
  store/sqlite_store_load.cc
  store/sqlite_store_open.cc
  store/state_parts_rows.cc
  store/store_factory.cc
  store/writer_thread.cc
  store/postgres/pg_conn.cc
  store/postgres/pg_batcher.cc
  store/postgres/pg_pool.cc
  store/postgres/pg_schema.cc
  store/postgres/pg_size_cap.cc
  store/postgres/pg_transactions.cc
  store/postgres/postgres_session_store.cc
  store/postgres/postgres_store_calls.cc
  store/postgres/postgres_store_load.cc
  store/postgres/postgres_store_writes.cc
  store/store_errors.cc
)
list(TRANSFORM F2OBO_SESSION_SOURCES PREPEND "${CMAKE_CURRENT_LIST_DIR}/")
