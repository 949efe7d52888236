# The PostgreSQL store's tests (label postgres): each test binary starts its
# own PostgreSQL (pg_cluster.h; scripts/deps.sh --test installs it), once:
# so each binary is one ctest test (gtest_discover_tests would run each
# case in a process, and a cluster, of its own).
find_package(PostgreSQL REQUIRED)
add_library(f2obo_pg_cluster STATIC server/store/postgres/pg_cluster.cc)
target_include_directories(f2obo_pg_cluster PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(f2obo_pg_cluster PUBLIC f2obo_loopback_port PostgreSQL::PostgreSQL absl::status
  absl::statusor absl::strings)

add_executable(pg_cluster_test server/store/postgres/pg_cluster_test.cc)
target_link_libraries(pg_cluster_test PRIVATE f2obo_pg_cluster GTest::gtest_main)
add_test(NAME postgres.pg_cluster COMMAND pg_cluster_test)
set_tests_properties(postgres.pg_cluster PROPERTIES LABELS postgres TIMEOUT 300)

# The PostgreSQL store: its own behaviours (a primary with a synchronous
# standby) and the store contract (store_contract.h) on it.
add_executable(postgres_store_test server/store/postgres/postgres_store_test.cc)
target_link_libraries(postgres_store_test PRIVATE f2obo_server_lib f2obo_pg_cluster
  GTest::gtest_main)
add_test(NAME postgres.store COMMAND postgres_store_test)
set_tests_properties(postgres.store PROPERTIES LABELS postgres TIMEOUT 300)
# Steps of several sessions committed as one batch (pg_batcher.h).
add_executable(postgres_batch_test server/store/postgres/postgres_batch_test.cc)
target_link_libraries(postgres_batch_test PRIVATE f2obo_server_lib f2obo_pg_cluster
  GTest::gtest_main)
add_test(NAME postgres.batch COMMAND postgres_batch_test)
set_tests_properties(postgres.batch PROPERTIES LABELS postgres TIMEOUT 300)
add_executable(store_contract_postgres_test server/store/postgres/store_contract_postgres.cc)
target_link_libraries(store_contract_postgres_test PRIVATE f2obo_store_contract f2obo_pg_cluster
  GTest::gtest_main)
add_test(NAME postgres.store_contract COMMAND store_contract_postgres_test)
set_tests_properties(postgres.store_contract PROPERTIES LABELS postgres TIMEOUT 300)
# The server with --store=postgresql://... (real processes on loopback).
add_executable(postgres_server_e2e_test server/store/postgres/postgres_server_e2e_test.cc)
target_link_libraries(postgres_server_e2e_test PRIVATE f2obo_e2e_support f2obo_server_process
  f2obo_client f2obo_pg_cluster GTest::gtest_main)
add_test(NAME postgres.server_e2e COMMAND postgres_server_e2e_test)
set_tests_properties(postgres.server_e2e PROPERTIES LABELS postgres TIMEOUT 300)
# Several servers sharing one PostgreSQL (no proxy): load on demand, the
# compare-and-set between replicas, eviction (real processes on loopback).
add_executable(shared_store_e2e_test server/store/postgres/shared_store_e2e_test.cc)
target_link_libraries(shared_store_e2e_test PRIVATE f2obo_e2e_support f2obo_server_process
  f2obo_client f2obo_pg_cluster GTest::gtest_main)
add_dependencies(shared_store_e2e_test f2obo-server)
add_test(NAME postgres.shared_store_e2e COMMAND shared_store_e2e_test)
set_tests_properties(postgres.shared_store_e2e PROPERTIES LABELS postgres TIMEOUT 300)
# Failover of the shared store (real replicas, nginx and PostgreSQL on
# loopback): replicas lost for good behind nginx; PostgreSQL killed and
# restarted, a primary killed and its synchronous standby promoted.
add_library(f2obo_failover_streams STATIC server/store/postgres/failover_streams.cc
  server/oracle_client.cc)
target_link_libraries(f2obo_failover_streams PUBLIC f2obo_e2e_support f2obo_e2e_client
  f2obo_client f2obo_test_support GTest::gtest)
foreach(name failover_replicas failover_database)
  add_executable(${name}_e2e_test server/store/postgres/${name}_e2e_test.cc)
  target_link_libraries(${name}_e2e_test PRIVATE f2obo_failover_streams f2obo_server_process
    f2obo_proxy_process f2obo_pg_cluster GTest::gtest_main)
  add_test(NAME postgres.${name} COMMAND ${name}_e2e_test)
  set_tests_properties(postgres.${name} PROPERTIES LABELS postgres TIMEOUT 300)
endforeach()
