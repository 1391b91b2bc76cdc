#include "train/kernel_profile.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <utility>

namespace gradsweep::train {
namespace {

bool has(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

bool has_any(std::string_view text, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return has(text, p); });
}

// An operator's name without its namespace and overload: "aten::addmm" -> "addmm", "aten::add_.Tensor" ->
// "add_". Kernel names have no "::" at their start and come back whole.
std::string_view op_stem(std::string_view name) {
  if (name.rfind("aten::", 0) != 0) return name;
  name.remove_prefix(6);
  return name.substr(0, name.find('.'));
}

bool is_gemm_op(std::string_view stem) {
  static constexpr std::string_view kOps[] = {
      "mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_addmm_activation", "addmv", "mv", "dot", "mkldnn_matmul"};
  return std::find(std::begin(kOps), std::end(kOps), stem) != std::end(kOps);
}

// Elementwise operators and the normalisations, reductions and losses that, like them, read and write
// each element about once: memory-bound where a GEMM is compute-bound.
bool is_elementwise_op(std::string_view stem) {
  static constexpr std::string_view kOps[] = {"add",
                                              "add_",
                                              "sub",
                                              "sub_",
                                              "mul",
                                              "mul_",
                                              "div",
                                              "div_",
                                              "neg",
                                              "tanh",
                                              "pow",
                                              "exp",
                                              "log",
                                              "sqrt",
                                              "rsqrt",
                                              "where",
                                              "masked_fill",
                                              "masked_fill_",
                                              "fill_",
                                              "zero_",
                                              "sum",
                                              "mean",
                                              "clamp",
                                              "clamp_",
                                              "lerp_",
                                              "addcmul_",
                                              "addcdiv_",
                                              "threshold_backward",
                                              "tanh_backward",
                                              "mse_loss",
                                              "nll_loss",
                                              "nll_loss_forward",
                                              "nll_loss_backward",
                                              "nll_loss_nd"};
  return std::find(std::begin(kOps), std::end(kOps), stem) != std::end(kOps);
}

}  // namespace

const char* to_string(KernelClass kind) {
  switch (kind) {
    case KernelClass::Gemm: return "gemm";
    case KernelClass::Attention: return "attention";
    case KernelClass::ElementwiseNorm: return "elementwise_norm";
    case KernelClass::Optimizer: return "optimizer";
    case KernelClass::Communication: return "communication";
    case KernelClass::Other: return "other";
  }
  return "other";
}

// The order matters: a fused attention kernel may be built from GEMM tiles ("fmha_..._gemm"), and the
// optimizer's multi-tensor norm is a norm; the more specific class is asked first.
KernelClass classify_kernel(std::string_view raw) {
  std::string lowered(raw);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string_view name = lowered;
  const std::string_view stem = op_stem(name);
  if (has_any(name, {"nccl", "allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter", "reducescatter",
                     "c10d::"}))
    return KernelClass::Communication;
  if (has_any(name, {"adam", "sgd", "_foreach_", "multi_tensor_apply", "optimizer"})) return KernelClass::Optimizer;
  if (has_any(name, {"attention", "flash", "fmha", "sdpa"})) return KernelClass::Attention;
  if (is_gemm_op(stem) || has_any(name, {"gemm", "cutlass", "xmma", "nvjet", "cublas"})) return KernelClass::Gemm;
  if (is_elementwise_op(stem) || has_any(name, {"norm", "gelu", "softmax", "dropout", "cross_entropy", "elementwise",
                                                "vectorized", "unrolled", "reduce_kernel"}))
    return KernelClass::ElementwiseNorm;
  return KernelClass::Other;
}

double KernelProfile::busy_seconds() const {
  double total = 0;
  for (double s : seconds) total += s;
  return total;
}

nlohmann::json KernelProfile::to_json() const {
  nlohmann::json classes = nlohmann::json::object();
  for (int k = 0; k < kKernelClassCount; ++k)
    classes[to_string(static_cast<KernelClass>(k))] = seconds[static_cast<std::size_t>(k)];
  nlohmann::json rows = nlohmann::json::array();
  for (const Entry& e : top)
    rows.push_back({{"name", e.name}, {"class", to_string(e.kind)}, {"seconds", e.seconds}, {"calls", e.calls}});
  return {{"source", source},   {"steps", steps}, {"step_seconds", step_seconds}, {"busy_seconds", busy_seconds()},
          {"seconds", classes}, {"top", rows}};
}

std::string KernelProfile::table() const {
  const double busy = busy_seconds();
  std::string out = "kernel profile (" + source + ", " + std::to_string(steps) + " steps): per step\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-17s %10s %7s\n", "class", "ms", "share");
  out += line;
  for (int k = 0; k < kKernelClassCount; ++k) {
    const double s = seconds[static_cast<std::size_t>(k)];
    std::snprintf(line, sizeof line, "  %-17s %10.3f %6.1f%%\n", to_string(static_cast<KernelClass>(k)), s * 1e3,
                  busy > 0 ? 100.0 * s / busy : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-17s %10.3f (step %.3f ms)", "busy", busy * 1e3, step_seconds * 1e3);
  return out + line;
}

KernelProfile summarize_kernels(const std::vector<KernelRecord>& records, const std::string& source, std::int64_t steps,
                                double step_seconds, std::size_t top_n) {
  // Each lane's events by start, an enclosing event before what it encloses; a stack of the events still
  // open gives each event its parent, whose self time loses the child's duration.
  std::vector<std::size_t> order(records.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const KernelRecord &x = records[a], &y = records[b];
    if (x.lane != y.lane) return x.lane < y.lane;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.end_ns > y.end_ns;
  });
  std::vector<double> self(records.size(), 0.0);
  std::vector<std::size_t> open;
  for (std::size_t n = 0; n < order.size(); ++n) {
    const std::size_t i = order[n];
    const KernelRecord& r = records[i];
    if (n > 0 && records[order[n - 1]].lane != r.lane) open.clear();
    while (!open.empty() && records[open.back()].end_ns <= r.start_ns) open.pop_back();
    const double duration = static_cast<double>(r.end_ns - std::min(r.start_ns, r.end_ns)) * 1e-9;
    self[i] += duration;
    if (!open.empty()) self[open.back()] -= duration;
    open.push_back(i);
  }

  KernelProfile profile;
  profile.source = source;
  profile.steps = steps;
  profile.step_seconds = step_seconds;
  const double per_step = steps > 0 ? 1.0 / static_cast<double>(steps) : 0.0;
  std::map<std::string, KernelProfile::Entry> by_name;
  for (std::size_t i = 0; i < records.size(); ++i) {
    KernelProfile::Entry& e = by_name[records[i].name];
    if (e.name.empty()) {
      e.name = records[i].name;
      e.kind = classify_kernel(e.name);
    }
    e.seconds += std::max(self[i], 0.0) * per_step;
    e.calls += per_step;
  }
  for (auto& [name, e] : by_name) {
    profile.seconds[static_cast<std::size_t>(e.kind)] += e.seconds;
    profile.top.push_back(std::move(e));
  }
  std::sort(profile.top.begin(), profile.top.end(),
            [](const KernelProfile::Entry& a, const KernelProfile::Entry& b) { return a.seconds > b.seconds; });
  if (profile.top.size() > top_n) profile.top.resize(top_n);
  return profile;
}

}  // namespace gradsweep::train
