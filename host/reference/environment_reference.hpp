#pragma once
// docs/reference/environment.md: every environment variable the host reads, from its one registry
// (env/environment.hpp).
#include <string>

namespace gradsweep::reference {

std::string environment_reference();

}  // namespace gradsweep::reference
