// version.cc - the only file that includes the generated header, so a new commit recompiles
// this file alone.
#include "common/version.h"

#include "qn_version.h"

namespace qn {

const char *build_version() { return QN_VERSION; }
const char *build_commit() { return QN_COMMIT; }

} // namespace qn
