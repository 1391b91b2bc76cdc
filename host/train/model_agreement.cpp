#include "train/model_agreement.hpp"

#include <gradsweep/sdk/status.hpp>

#include <torch/torch.h>

#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

namespace gradsweep::train {
namespace {

// One line per parameter: "name [d0, d1] dtype".
std::vector<std::string> describe(const std::vector<sdk::Parameter>& params) {
  std::vector<std::string> lines;
  for (const auto& p : params)
    lines.push_back(p.name + " " + c10::str(p.tensor.sizes()) + " " + c10::toString(p.tensor.scalar_type()));
  return lines;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Every rank's text, gathered on every rank (lengths first, then the texts padded to the longest).
std::vector<std::string> gather_texts(comm::HostCommunicator& comm, const std::string& mine) {
  torch::Tensor length = torch::tensor({static_cast<std::int64_t>(mine.size())}, torch::kLong);
  torch::Tensor lengths = torch::empty({comm.size()}, torch::kLong);
  sdk::check(comm.allgather(length, lengths));
  const std::int64_t longest = lengths.max().item<std::int64_t>();
  torch::Tensor text = torch::zeros({longest}, torch::kByte);
  std::memcpy(text.data_ptr(), mine.data(), mine.size());
  torch::Tensor texts = torch::empty({longest * comm.size()}, torch::kByte);
  sdk::check(comm.allgather(text, texts));
  std::vector<std::string> out;
  for (int r = 0; r < comm.size(); ++r)
    out.emplace_back(static_cast<const char*>(texts.data_ptr()) + r * longest,
                     static_cast<std::size_t>(lengths[r].item<std::int64_t>()));
  return out;
}

}  // namespace

void check_models_agree(comm::HostCommunicator& comm, const std::vector<sdk::Parameter>& params) {
  if (comm.size() == 1) return;
  const std::vector<std::string> texts = gather_texts(comm, join(describe(params)));
  comm.take_stats();  // the host's check, not the strategy's traffic
  const std::vector<std::string> reference = split(texts[0]);
  for (int r = 1; r < comm.size(); ++r) {
    const std::vector<std::string> other = split(texts[static_cast<std::size_t>(r)]);
    for (std::size_t i = 0; i < std::max(reference.size(), other.size()); ++i) {
      const std::string a = i < reference.size() ? reference[i] : "(none)";
      const std::string b = i < other.size() ? other[i] : "(none)";
      if (a == b) continue;
      throw std::runtime_error("the ranks' models differ, so no gradient can be combined: parameter " +
                               std::to_string(i) + " is '" + a + "' on rank 0 but '" + b + "' on rank " +
                               std::to_string(r) + " (rank 0 has " + std::to_string(reference.size()) +
                               " parameters, rank " + std::to_string(r) + " has " + std::to_string(other.size()) +
                               "); every rank must train the same model configuration");
    }
  }
}

}  // namespace gradsweep::train
