// The dashboard's page, generated at build time (embed_page.cmake) from
// page/index.html with page/app.js inlined.  Its own header so that the
// generated source needs nothing else.
#ifndef F2OBO_SERVER_DASHBOARD_PAGE_H_
#define F2OBO_SERVER_DASHBOARD_PAGE_H_

namespace f2obo::dashboard {

// NUL-terminated UTF-8 HTML; no external references (checked when embedded).
extern const char kDashboardPage[];

}  // namespace f2obo::dashboard

#endif  // F2OBO_SERVER_DASHBOARD_PAGE_H_
