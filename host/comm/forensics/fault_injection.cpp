#include "comm/forensics/fault_injection.hpp"

#include "env/environment.hpp"

#include <atomic>
#include <stdexcept>

namespace gradsweep::comm::fault_injection {
namespace {

constexpr const char* kVariable = "GRADSWEEP_INJECT_FAULT";

std::atomic<std::int64_t> current_step{-1};
std::atomic<bool> fired{false};

// Read once: the variable belongs to the job, not to a call.
const Fault& armed() {
  static const Fault fault = [] {
    const std::string text = env::text(kVariable);
    return text.empty() ? Fault{} : parse_fault(text);
  }();
  return fault;
}

}  // namespace

Fault parse_fault(const std::string& text) {
  const auto colon = text.find(':');
  try {
    std::size_t used_rank = 0, used_step = 0;
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    const std::string rank = text.substr(0, colon), step = text.substr(colon + 1);
    Fault fault{std::stoi(rank, &used_rank), std::stoll(step, &used_step)};
    if (used_rank != rank.size() || used_step != step.size() || fault.rank < 0 || fault.step < 0)
      throw std::invalid_argument("trailing text or negative");
    return fault;
  } catch (const std::exception&) {
    throw std::invalid_argument(std::string(kVariable) + "='" + text +
                                "': expected RANK:STEP, two non-negative integers");
  }
}

void enter_step(std::int64_t step) {
  armed();  // a malformed variable is reported at the first step, not inside a collective
  current_step.store(step);
}

void check_call(int rank, const CallShape& call) {
  const Fault& fault = armed();
  if (fault.rank != rank || current_step.load() < fault.step || fired.exchange(true)) return;
  throw std::runtime_error("injected fault (" + std::string(kVariable) + "=" + std::to_string(fault.rank) + ":" +
                           std::to_string(fault.step) + "): " + describe(call) + " on rank " + std::to_string(rank) +
                           " at step " + std::to_string(current_step.load()));
}

}  // namespace gradsweep::comm::fault_injection
