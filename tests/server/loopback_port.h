// A free loopback TCP port, for the test fixtures that start servers of
// their own (f2obo-server replicas, nginx, PostgreSQL) on loopback.
#ifndef F2OBO_TESTS_SERVER_LOOPBACK_PORT_H_
#define F2OBO_TESTS_SERVER_LOOPBACK_PORT_H_

namespace f2obo::testing {

// A loopback TCP port nobody listens on now (bound to port 0 and released;
// another process may take it before the caller binds it: callers retry).
int FreeLoopbackPort();

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_LOOPBACK_PORT_H_
