#pragma once
// Everything a plugin author includes, and the macros that export a plugin.
//
//   #include <gradsweep/sdk/plugin.hpp>
//   class MyStrategy : public gradsweep::sdk::Strategy { ... };
//   constexpr std::array<gradsweep::sdk::OptionSpec, 1> kOptions{{
//       {"bucket_mb", gradsweep::sdk::OptionType::Float, "25", "fusion bucket size in MiB"}}};
//   GRADSWEEP_STRATEGY_PLUGIN("mine", "1.0.0", "what it does, in one line", MyStrategy, kOptions)
//
// The class needs a constructor taking `const gradsweep::sdk::PluginContext&`.
#include <gradsweep/sdk/abi.hpp>
#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/options.hpp>
#include <gradsweep/sdk/services.hpp>
#include <gradsweep/sdk/status.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <boost/dll/alias.hpp>

#include <array>
#include <new>

namespace gradsweep::sdk::detail {

template <PluginKind K> struct InterfaceOf;
template <> struct InterfaceOf<PluginKind::Model> { using type = ModelAbi; };
template <> struct InterfaceOf<PluginKind::Strategy> { using type = StrategyAbi; };

// create/destroy for one class. The object is handed out as a pointer to its boundary interface, so the
// host's cast back from void* is exact, and is deleted here, by the code that allocated it.
template <PluginKind K, class Class>
struct Factory {
  using Interface = typename InterfaceOf<K>::type;
  static void* create(const PluginContext* context, Status* status) noexcept {
    Interface* object = nullptr;
    *status = guard([&] { object = new Class(*context); });
    return static_cast<void*>(object);
  }
  static void destroy(void* object) noexcept {
    delete static_cast<Class*>(static_cast<Interface*>(object));
  }
};

}  // namespace gradsweep::sdk::detail

// The general form: tests use it to build plugins with a deliberately wrong ABI version or fingerprint.
#define GRADSWEEP_PLUGIN_WITH(KIND, NAME, VERSION, SUMMARY, CLASS, OPTIONS, ABI_MAJOR, ABI_MINOR, BUILD) \
  namespace {                                                                                       \
  using gradsweep_factory_ = ::gradsweep::sdk::detail::Factory<KIND, CLASS>;                        \
  const ::gradsweep::sdk::PluginDescriptor gradsweep_descriptor_{                                   \
      sizeof(::gradsweep::sdk::PluginDescriptor),                                                   \
      (ABI_MAJOR),                                                                                  \
      (ABI_MINOR),                                                                                  \
      (KIND),                                                                                       \
      (NAME),                                                                                       \
      (VERSION),                                                                                    \
      (SUMMARY),                                                                                    \
      (BUILD),                                                                                      \
      (OPTIONS).data(),                                                                             \
      static_cast<std::uint32_t>((OPTIONS).size()),                                                 \
      &gradsweep_factory_::create,                                                                  \
      &gradsweep_factory_::destroy};                                                                \
  const ::gradsweep::sdk::PluginDescriptor* gradsweep_describe_() { return &gradsweep_descriptor_; } \
  }                                                                                                 \
  BOOST_DLL_ALIAS(gradsweep_describe_, gradsweep_plugin)

#define GRADSWEEP_PLUGIN(KIND, NAME, VERSION, SUMMARY, CLASS, OPTIONS)                            \
  GRADSWEEP_PLUGIN_WITH(KIND, NAME, VERSION, SUMMARY, CLASS, OPTIONS, ::gradsweep::sdk::kAbiMajor, \
                        ::gradsweep::sdk::kAbiMinor, ::gradsweep::sdk::detail::this_build())

#define GRADSWEEP_MODEL_PLUGIN(NAME, VERSION, SUMMARY, CLASS, OPTIONS) \
  GRADSWEEP_PLUGIN(::gradsweep::sdk::PluginKind::Model, NAME, VERSION, SUMMARY, CLASS, OPTIONS)

#define GRADSWEEP_STRATEGY_PLUGIN(NAME, VERSION, SUMMARY, CLASS, OPTIONS) \
  GRADSWEEP_PLUGIN(::gradsweep::sdk::PluginKind::Strategy, NAME, VERSION, SUMMARY, CLASS, OPTIONS)
