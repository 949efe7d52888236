# Included from server/CMakeLists.txt: the dashboard's sources go into
# f2obo_server_lib; its page is embedded at build time.
set(F2OBO_DASHBOARD_DIR ${CMAKE_CURRENT_LIST_DIR})
set(F2OBO_DASHBOARD_PAGE_CC ${CMAKE_CURRENT_BINARY_DIR}/dashboard/page.cc)
add_custom_command(
  OUTPUT ${F2OBO_DASHBOARD_PAGE_CC}
  COMMAND ${CMAKE_COMMAND} -DHTML=${F2OBO_DASHBOARD_DIR}/page/index.html
          "-DJS=${F2OBO_DASHBOARD_DIR}/page/charts.js;${F2OBO_DASHBOARD_DIR}/page/app.js" -DOUT=${F2OBO_DASHBOARD_PAGE_CC}
          -P ${F2OBO_DASHBOARD_DIR}/embed_page.cmake
  DEPENDS ${F2OBO_DASHBOARD_DIR}/page/index.html ${F2OBO_DASHBOARD_DIR}/page/charts.js
          ${F2OBO_DASHBOARD_DIR}/page/app.js
          ${F2OBO_DASHBOARD_DIR}/embed_page.cmake
  COMMENT "Embedding the dashboard page"
  VERBATIM)
target_sources(f2obo_server_lib PRIVATE
  ${F2OBO_DASHBOARD_DIR}/api.cc
  ${F2OBO_DASHBOARD_DIR}/dashboard.cc
  ${F2OBO_DASHBOARD_PAGE_CC})
