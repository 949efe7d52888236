# The PostgreSQL store's tests (label postgres): each test binary starts its
# own PostgreSQL (pg_cluster.h; scripts/deps.sh --test installs it).
find_package(PostgreSQL REQUIRED)
add_library(f2obo_pg_cluster STATIC server/store/postgres/pg_cluster.cc)
target_include_directories(f2obo_pg_cluster PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(f2obo_pg_cluster PUBLIC PostgreSQL::PostgreSQL absl::status
  absl::statusor absl::strings)

add_executable(pg_cluster_test server/store/postgres/pg_cluster_test.cc)
target_link_libraries(pg_cluster_test PRIVATE f2obo_pg_cluster GTest::gtest_main)
gtest_discover_tests(pg_cluster_test DISCOVERY_TIMEOUT 60 TEST_PREFIX "postgres."
  PROPERTIES LABELS postgres TIMEOUT 120)
