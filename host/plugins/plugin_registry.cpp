#include "plugins/plugin_registry.hpp"

#include "env/environment.hpp"
#include "plugins/elf_check.hpp"
#include "plugins/sized_struct.hpp"

#include <gradsweep/sdk/build_fingerprint.hpp>

#include <boost/dll/runtime_symbol_info.hpp>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace gradsweep::plugins {
namespace fs = std::filesystem;

namespace {

std::string version_text(std::uint32_t v, std::uint32_t digits_minor) {
  // CUDA 12040 -> "12.4", NCCL 22105 -> "2.21.5"
  if (v == 0) return "none";
  std::ostringstream out;
  if (digits_minor == 3)
    out << v / 1000 << '.' << (v % 1000) / 10;
  else
    out << v / 10000 << '.' << (v % 10000) / 100 << '.' << v % 100;
  return out.str();
}

bool looks_like_library(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 3 && (name.rfind(".so") == name.size() - 3 || name.find(".so.") != std::string::npos);
}

}  // namespace

std::string describe(const sdk::BuildFingerprint& b) {
  std::ostringstream out;
  out << "torch " << b.torch_major << '.' << b.torch_minor << ", cxx11-abi " << b.cxx11_abi << ", "
      << std::string(b.compiler, strnlen(b.compiler, sizeof b.compiler)) << ", cuda " << version_text(b.cuda_version, 3)
      << ", nccl " << version_text(b.nccl_version, 5);
  return out.str();
}

std::string incompatibility(const sdk::PluginDescriptor& d, const fs::path& path) {
  const std::string file = path.string();
  // The first three fields are readable in every ABI version; check them before touching the rest.
  constexpr std::size_t kMinimumSize = size_required<sdk::PluginDescriptor>(0);
  if (d.abi_major != sdk::kAbiMajor)
    return file + ": plugin SDK ABI " + std::to_string(d.abi_major) + "." + std::to_string(d.abi_minor) +
           " is incompatible with host SDK ABI " + std::to_string(sdk::kAbiMajor) + "." +
           std::to_string(sdk::kAbiMinor) + " (the major versions must be equal): rebuild the plugin";
  if (d.abi_minor > sdk::kAbiMinor)
    return file + ": plugin SDK ABI " + std::to_string(d.abi_major) + "." + std::to_string(d.abi_minor) +
           " is newer than host SDK ABI " + std::to_string(sdk::kAbiMajor) + "." + std::to_string(sdk::kAbiMinor) +
           ": upgrade gradsweep or rebuild the plugin against this SDK";
  if (d.struct_size < kMinimumSize)
    return file + ": descriptor is " + std::to_string(d.struct_size) + " bytes, expected at least " +
           std::to_string(kMinimumSize) + ": not a valid gradsweep plugin";
  const sdk::BuildFingerprint host = sdk::detail::this_build();
  if (d.build.torch_major != host.torch_major || d.build.torch_minor != host.torch_minor ||
      d.build.cxx11_abi != host.cxx11_abi)
    return file + ": plugin built against " + describe(d.build) + "; host built against " + describe(host) +
           " (LibTorch major.minor and the C++11 string ABI must match): rebuild the plugin";
  if (d.kind != sdk::PluginKind::Model && d.kind != sdk::PluginKind::Strategy)
    return file + ": unknown plugin kind " + std::to_string(static_cast<std::uint32_t>(d.kind));
  if (d.name == nullptr || *d.name == '\0' || d.create == nullptr || d.destroy == nullptr)
    return file + ": descriptor lacks a name or create/destroy functions";
  // What its minor promised (the appended descriptor fields, its capabilities): refused now, by name, rather
  // than read as garbage later.
  try {
    const std::string plugin = file + ": " + sdk::to_string(d.kind) + " '" + d.name + "'";
    const sdk::PluginDescriptor whole = read_sized(&d, d.abi_minor, plugin);
    if (whole.capabilities != nullptr) (void)read_sized(whole.capabilities, d.abi_minor, plugin);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

std::vector<fs::path> PluginRegistry::search_path(const std::vector<fs::path>& extra) {
  std::vector<fs::path> dirs(extra.begin(), extra.end());
  for (const std::string& item : env::path_list("GRADSWEEP_PLUGIN_PATH")) dirs.emplace_back(item);
  // Build tree: <build>/gradsweep next to <build>/plugins. Install tree: <prefix>/bin/gradsweep and
  // <prefix>/lib/gradsweep/plugins.
  const fs::path exe_dir = boost::dll::program_location().parent_path().string();
  dirs.push_back(exe_dir / "plugins");
  dirs.push_back(exe_dir.parent_path() / "lib" / "gradsweep" / "plugins");
  return dirs;
}

void PluginRegistry::scan(const std::vector<fs::path>& directories) {
  for (const auto& dir : directories) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.is_regular_file() && looks_like_library(entry.path())) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) load_file(f);
  }
}

void PluginRegistry::load_file(const fs::path& path) {
  const fs::path canonical = fs::weakly_canonical(path);
  for (const auto& p : plugins_)
    if (p.path == canonical) return;
  // dlopen of a truncated library dies with SIGBUS instead of failing: check the file first.
  if (std::string why = elf_problem(canonical); !why.empty()) {
    refused_.push_back({canonical, canonical.string() + ": cannot load: " + why});
    return;
  }
  boost::dll::shared_library library;
  try {
    library.load(canonical.string(), boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now);
  } catch (const std::exception& e) {
    refused_.push_back({canonical, canonical.string() + ": cannot load: " + e.what()});
    return;
  }
  if (!library.has(sdk::kEntryPointName)) {
    refused_.push_back({canonical, canonical.string() + ": no '" + std::string(sdk::kEntryPointName) +
                                       "' entry point: not a gradsweep plugin"});
    return;
  }
  const sdk::PluginDescriptor* descriptor = library.get_alias<sdk::DescribePluginFn>(sdk::kEntryPointName)();
  if (descriptor == nullptr) {
    refused_.push_back({canonical, canonical.string() + ": entry point returned no descriptor"});
    return;
  }
  if (std::string why = incompatibility(*descriptor, canonical); !why.empty()) {
    refused_.push_back({canonical, why});
    return;
  }
  if (const PluginRecord* earlier = try_find(descriptor->kind, descriptor->name)) {
    refused_.push_back({canonical, canonical.string() + ": " + sdk::to_string(descriptor->kind) + " '" +
                                       descriptor->name + "' is already provided by " + earlier->path.string()});
    return;
  }
  plugins_.push_back({descriptor->name, descriptor->kind, descriptor->version ? descriptor->version : "",
                      descriptor->summary ? descriptor->summary : "", canonical, descriptor});
  libraries_.push_back(std::move(library));
}

const PluginRecord* PluginRegistry::try_find(sdk::PluginKind kind, const std::string& name) const {
  for (const auto& p : plugins_)
    if (p.kind == kind && p.name == name) return &p;
  return nullptr;
}

const PluginRecord& PluginRegistry::find(sdk::PluginKind kind, const std::string& name) const {
  if (const PluginRecord* p = try_find(kind, name)) return *p;
  std::ostringstream msg;
  msg << "unknown " << sdk::to_string(kind) << " plugin '" << name << "'; available:";
  bool any = false;
  for (const auto& p : plugins_)
    if (p.kind == kind) {
      msg << (any ? ", " : " ") << p.name;
      any = true;
    }
  if (!any) msg << " none";
  for (const auto& r : refused_)
    if (r.path.filename().string().find(name) != std::string::npos) msg << "\n  refused: " << r.reason;
  msg << "\n  (run 'gradsweep plugins' to see where plugins are searched)";
  throw std::runtime_error(msg.str());
}

}  // namespace gradsweep::plugins
