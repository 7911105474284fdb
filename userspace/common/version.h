// version.h - the version and the commit this binary was built from, recorded at build time
// (cmake/version.cmake): `quench --version` and every results folder's metadata.txt.
#pragma once

namespace qn {

const char *build_version(); // the project's version, e.g. "0.1.0"
const char *build_commit();  // "c7ef1ade5fed", "c7ef1ade5fed-dirty" or "unknown" (not a git checkout)

} // namespace qn
