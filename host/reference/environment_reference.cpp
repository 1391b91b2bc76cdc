#include "reference/environment_reference.hpp"

#include "reference/markdown.hpp"

#include "env/environment.hpp"

#include <vector>

namespace gradsweep::reference {

std::string environment_reference() {
  std::vector<std::vector<std::string>> own, read;
  for (const env::Variable& v : env::registry()) {
    const std::string forwarded = v.forwarded ? "yes" : "";
    if (v.gradsweep)
      own.push_back({code(v.name), v.type, v.default_value, forwarded, v.doc});
    else
      read.push_back({code(v.name), v.type, v.doc, forwarded});
  }
  return "# Environment variables\n\n"
         "Generated from the code by `gradsweep reference` ([README.md](README.md)): do not edit. Every variable the "
         "host reads is in one registry (`host/env/environment.cpp`); a bad value is an error naming the variable "
         "and the value. \"Forwarded\": the local launcher passes it on to every rank (`mpirun -x`) when it is set; "
         "the others must be set for every rank by whoever starts them.\n\n"
         "## gradsweep's own\n\n" +
         table({"variable", "value", "unset", "forwarded", "meaning"}, own) + "\n## Read, not set, by gradsweep\n\n" +
         table({"variable", "value", "why", "forwarded"}, read);
}

}  // namespace gradsweep::reference
