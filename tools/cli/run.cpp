// `nnops run <operator>`: one operator call on .npy files, for every operator of the descriptor list.
//
// Each tensor argument is an option --<name> FILE (a scalar one also takes a number), each attribute an
// option --<attr>. The inputs (and in-place arguments) are read and checked, the operator's own check runs,
// and the operator computes in memory before any file is created; then the outputs and the in-place
// arguments are written, each through a temporary file and a rename (atomic_file.hpp): all temporaries are
// written and flushed first and renamed one after another at the end.
//
// Exit status: 0 success; 1 data or operator error (missing or bad file, the operator's check, I/O);
// 2 usage error (reported by CLI11 in main.cpp). Every error is one line on stderr.
#include "tools/cli/run.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "nnops/nnops.hpp"
#include "src/ops/op_desc.hpp"
#include "tools/cli/atomic_file.hpp"
#include "tools/cli/cli_util.hpp"
#include "tools/cli/npy.hpp"

namespace nnops::cli {
namespace {

using ops::AttrKind;
using ops::OpDesc;
using ops::Role;
using ops::TensorSpec;

int fail(const std::string& msg) {
  std::fprintf(stderr, "nnops: error: %s\n", msg.c_str());
  return 1;
}

void note(const std::string& msg) { std::fprintf(stderr, "nnops: note: %s\n", msg.c_str()); }

// Reads `path` given to `option`; errors and conversion notes name both.
Status load(const std::string& option, const std::string& path, NpyArray* a) {
  if (Status s = read_npy(path, a); !s) return Status(s.code(), option + " " + path + ": " + s.message());
  if (!a->conversions.empty()) note(option + " " + path + ": " + a->conversions);
  return Status::ok();
}

// True when both paths name the same existing file (hard links and symlinks included).
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

void crash_hook(const char* stage) {
  const char* v = std::getenv(kCrashHookEnv);
  if (v && std::strcmp(v, stage) == 0) ::_exit(9);
}

// Writes one array as .npy to a prepared temporary file and flushes it.
Status write_npy(AtomicFile* f, DType dtype, const std::vector<int64_t>& shape, const void* data, std::size_t bytes) {
  const std::string pre = npy_preamble(dtype, shape);
  if (Status s = f->write(pre.data(), pre.size()); !s) return s;
  if (Status s = f->write(data, bytes); !s) return s;
  return f->finish();
}

// A whole string that strtod reads as a number (decimal, exponent, hex, inf, nan).
bool parse_number(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

std::string format_g(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// "a", "a and b", "a, b and c".
std::string join_and(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : (i + 1 == v.size() ? " and " : ", ")) + v[i];
  return s;
}

// What the command line said, per tensor and attribute of the descriptor.
struct RunState {
  std::vector<std::string> files;  // per tensor; "" when not given
  std::vector<int64_t> ints;       // per attribute
  std::vector<double> reals;
  std::unique_ptr<bool[]> flag_store;  // per attribute (std::vector<bool> cannot bind to CLI11)
  bool force = false, aux = false;
  int64_t steps = 1;
  int threads = 0;
};

bool has_role(const OpDesc& d, Role r) {
  for (const TensorSpec& t : d.tensors) {
    if (t.role == r) return true;
  }
  return false;
}

// One tensor argument after loading: its array (a file, a number, or a new output).
struct Arg {
  NpyArray array;
  bool present = false;
  bool from_number = false;
  double given = 0, rounded = 0;
};

int run_op(const OpDesc& d, const RunState& o) {
  const int nt = static_cast<int>(d.tensors.size());
  auto opt = [&](int i) { return "--" + option_name(d.tensors[i].name); };
  auto given = [&](int i) { return !o.files[i].empty(); };

  // Cheapest refusal first: an existing output without --force.
  for (int i = 0; i < nt; ++i) {
    if (d.tensors[i].role == Role::kOut && given(i) && !o.force && exists(o.files[i])) {
      return fail(opt(i) + " " + o.files[i] + ": the file exists; pass --force to replace it");
    }
  }

  // The first argument's dtype is the call's dtype T (numbers given for scalars are rounded to it).
  std::vector<Arg> args(nt);
  auto load_file = [&](int i) -> Status {
    args[i].present = true;
    return load(opt(i), o.files[i], &args[i].array);
  };
  for (int i = 0; i < nt; ++i) {
    const TensorSpec& s = d.tensors[i];
    if (s.role == Role::kOut || s.scalar || !given(i)) continue;
    if (Status st = load_file(i); !st) return fail(st.message());
  }

  // Loaded into separate buffers, the operator could not see that two arguments are one file: an in-place
  // argument shared with another would be read and written as two arrays, and an output written over an
  // input would silently replace it. Only an output's declared alias (dx over dy) may be its input's file.
  for (int i = 0; i < nt; ++i) {
    if (!given(i)) continue;
    for (int j = i + 1; j < nt; ++j) {
      if (!given(j) || !same_file(o.files[i], o.files[j])) continue;
      const TensorSpec &a = d.tensors[i], &b = d.tensors[j];
      const bool a_out = a.role == Role::kOut, b_out = b.role == Role::kOut;
      if (a_out != b_out && a.role != Role::kInOut && b.role != Role::kInOut) {
        const int out = a_out ? i : j, in = a_out ? j : i;
        if (d.tensors[out].alias_of == in) continue;
        const int alias = d.tensors[out].alias_of;
        return fail(opt(out) + " " + o.files[out] + " is the same file as " + opt(in) +
                    (alias >= 0 ? "; only " + opt(alias) + " may be replaced by the result"
                                : "; an output may not replace an input"));
      }
      if (!a_out && !b_out && a.role != Role::kInOut && b.role != Role::kInOut) continue;  // two inputs: fine
      return fail(opt(i) + " " + o.files[i] + " and " + opt(j) + " " + o.files[j] + " are the same file");
    }
  }

  // The call's dtype: the first tensor argument's.
  const DType t = args[0].present ? args[0].array.dtype : DType::kFloat32;
  for (int i = 0; i < nt; ++i) {
    const TensorSpec& s = d.tensors[i];
    if (!s.scalar || !given(i)) continue;
    Arg& a = args[i];
    double v = 0;
    if (!parse_number(o.files[i], &v)) {
      if (Status st = load_file(i); !st) return fail(st.message());
      continue;
    }
    a.present = a.from_number = true;
    a.given = v;
    a.array.dtype = t;
    a.array.shape = {};
    a.array.numel = 1;
    if (Status st = a.array.data.allocate(dtype_size(t)); !st) return fail(st.message());
    store_from_double(a.array.data.data(), t, 0, v);
    a.rounded = load_as_double(a.array.data.data(), t, 0);
  }

  ops::Attrs attrs = d.default_attrs();
  for (std::size_t k = 0; k < d.attrs.size(); ++k) {
    switch (d.attrs[k].kind) {
      case AttrKind::kInt:
        attrs[k].i = o.ints[k];
        break;
      case AttrKind::kFloat:
        attrs[k].f = o.reals[k];
        break;
      case AttrKind::kBool:
        attrs[k].b = o.flag_store[k];
        break;
      case AttrKind::kMask:  // the optional outputs that were given
        attrs[k].mask.clear();
        for (int i : d.optional_outputs()) attrs[k].mask.push_back(given(i));
        break;
    }
  }

  // Outputs, shaped as the operator derives them from the inputs.
  std::vector<TensorView> views(nt);
  for (int i = 0; i < nt; ++i) {
    if (args[i].present) views[i] = args[i].array.view();
  }
  std::vector<ops::OutputShape> shapes;
  const DType aux = o.aux ? DType::kFloat32 : t;
  if (Status st = d.infer(views.data(), attrs, aux, &shapes); !st) return fail(st.message());
  for (int i = 0; i < nt; ++i) {
    if (d.tensors[i].role != Role::kOut || !given(i)) continue;
    NpyArray& a = args[i].array;
    a.dtype = shapes[i].dtype;
    a.shape = shapes[i].shape;
    a.numel = 1;
    for (int64_t v : a.shape) a.numel *= v;
    if (Status st = a.data.allocate(a.bytes()); !st) return fail(st.message());
    args[i].present = true;
    views[i] = a.view();
  }

  const Context ctx{o.threads};
  for (int64_t step = 0; step < o.steps; ++step) {
    const Status s = ops::run_prepared(d.name, d.prepare, views.data(), attrs, ctx);
    if (!s) {
      // "beta is 1; expected a value in [0, 1)" puzzles a user who typed 0.9999 for a bfloat16 var: say so.
      std::string msg = s.message();
      for (int i = 0; i < nt; ++i) {
        const Arg& a = args[i];
        const bool changed = a.given != a.rounded && !(std::isnan(a.given) && std::isnan(a.rounded));
        if (a.from_number && changed && msg.find(std::string(d.tensors[i].name) + " is ") != std::string::npos) {
          msg += " (" + opt(i) + " " + o.files[i] + " rounds to " + format_g(a.rounded) + " in " + dtype_name(t) + ")";
        }
      }
      return fail(msg);
    }
  }
  for (int i = 0; i < nt; ++i) {
    const Arg& a = args[i];
    if (a.from_number && a.given != 0 && a.rounded == 0) {
      note(opt(i) + " " + o.files[i] + " rounds to 0 in " + dtype_name(t));
    }
  }

  // The files to write, in descriptor order: outputs and in-place arguments.
  std::vector<int> written;
  std::vector<std::string> inouts, outputs;
  for (int i = 0; i < nt; ++i) {
    if (d.tensors[i].role == Role::kInOut) {
      written.push_back(i);
      inouts.push_back(o.files[i]);
    } else if (d.tensors[i].role == Role::kOut && given(i)) {
      written.push_back(i);
      outputs.push_back(o.files[i] + " (" + dtype_name(args[i].array.dtype) + " " +
                        shape_string(args[i].array.shape) + ")");
    }
  }
  if (outputs.empty() && !inouts.empty() && args[written[0]].array.numel == 0) {
    std::printf("%s: %s %s empty; nothing to update\n", d.name, join_and(inouts).c_str(),
                inouts.size() == 1 ? "is" : "are");
    return 0;
  }
  std::vector<std::unique_ptr<AtomicFile>> files;
  for (int i : written) {
    files.push_back(std::make_unique<AtomicFile>());
    const bool replace = d.tensors[i].role == Role::kInOut || o.force;
    if (Status s = files.back()->open(o.files[i], replace ? AtomicFile::Mode::kReplace : AtomicFile::Mode::kCreate);
        !s) {
      return fail(opt(i) + " " + s.message());
    }
  }
  for (std::size_t k = 0; k < written.size(); ++k) {
    const NpyArray& a = args[written[k]].array;
    if (Status s = write_npy(files[k].get(), a.dtype, a.shape, a.data.data(), a.bytes()); !s) return fail(s.message());
  }
  crash_hook("1");
  for (std::size_t k = 0; k < written.size(); ++k) {
    if (Status s = files[k]->commit(); !s) {
      std::vector<std::string> done, left;
      for (std::size_t j = 0; j < written.size(); ++j) (j < k ? done : left).push_back(o.files[written[j]]);
      std::string msg = opt(written[k]) + " " + s.message();
      if (done.empty() && left.size() > 1) msg += "; " + join_and(left) + " are unchanged";
      if (!done.empty()) {
        msg += "; " + join_and(done) + (done.size() == 1 ? " was" : " were") + " updated but " + join_and(left) +
               (left.size() == 1 ? " was" : " were") + " not";
      }
      return fail(msg);
    }
    if (k == 0) crash_hook("2");
  }
  std::string what;
  if (!outputs.empty()) what = "wrote " + join_and(outputs);
  if (!inouts.empty()) {
    const NpyArray& a = args[written[0]].array;
    what += (what.empty() ? "" : "; ") + std::string("updated ") + join_and(inouts) + " (" + dtype_name(a.dtype) +
            " " + shape_string(a.shape) + ", " + std::to_string(o.steps) + " step" + (o.steps == 1 ? "" : "s") + ")";
  }
  std::printf("%s: %s\n", d.name, what.c_str());
  return 0;
}

void add_run(CLI::App* run, const OpDesc& d, std::vector<Subcommand>* out) {
  auto o = std::make_shared<RunState>();
  const int nt = static_cast<int>(d.tensors.size());
  o->files.assign(nt, "");
  o->ints.assign(d.attrs.size(), 0);
  o->reals.assign(d.attrs.size(), 0);
  o->flag_store.reset(new bool[d.attrs.size() + 1]());
  CLI::App* c = run->add_subcommand(d.name, d.summary);
  for (int i = 0; i < nt; ++i) {
    const TensorSpec& s = d.tensors[i];
    std::string help = s.help;
    if (s.scalar) help += ": a number or a one-element .npy file";
    if (s.role == Role::kOut) {
      help += " (refused if it exists, unless --force";
      if (s.alias_of >= 0) help += "; may be the --" + option_name(d.tensors[s.alias_of].name) + " file";
      help += ")";
      if (s.optional) help += "; computed only when given";
    }
    CLI::Option* opt = c->add_option(option_names(s.name), o->files[i], help)->type_name(s.scalar ? "NUM|FILE" : "FILE");
    if (!s.optional) opt->required();
  }
  for (std::size_t k = 0; k < d.attrs.size(); ++k) {
    const ops::AttrSpec& a = d.attrs[k];
    CLI::Option* opt = nullptr;
    switch (a.kind) {
      case AttrKind::kInt:
        o->ints[k] = std::isnan(a.def) ? 0 : static_cast<int64_t>(a.def);
        opt = c->add_option(option_names(a.name), o->ints[k], a.help);
        break;
      case AttrKind::kFloat:
        o->reals[k] = a.def;
        opt = c->add_option(option_names(a.name), o->reals[k], a.help);
        break;
      case AttrKind::kBool:
        c->add_flag(option_names(a.name), o->flag_store[k], a.help);
        break;
      case AttrKind::kMask:
        break;
    }
    if (opt && std::isnan(a.def)) opt->required();
  }
  if (*d.run_aux_flag) c->add_flag(d.run_aux_flag, o->aux, d.run_aux_help);
  if (has_role(d, Role::kOut)) {
    c->add_flag("--force", o->force, "Replace existing output files (atomically: temporary file + rename)");
  }
  if (has_role(d, Role::kInOut)) {
    c->add_option("--steps", o->steps, "Apply the call K times with the same inputs before writing (default 1)")
        ->type_name("K")
        ->check(CLI::PositiveNumber);
  }
  c->add_option("--threads", o->threads, "Threads (default: NNOPS_NUM_THREADS or all cores); results are identical")
      ->check(CLI::Range(0, 4096));
  std::string footer = std::string("Example:\n") + d.run_example + "\n" +
                       "Inputs: .npy 1.0/2.0/3.0, '<f4', '<f2' or bfloat16 ('<V2', as np.save writes "
                       "ml_dtypes.bfloat16);\nbig-endian and Fortran-order arrays are converted (with a note). Outputs "
                       "are written as np.save would\nwrite them (little-endian, C order), each replaced atomically "
                       "(temporary file, fsync, rename);\nall temporaries are written before the first rename.";
  if (has_role(d, Role::kInOut)) {
    footer +=
        " Numbers are rounded to the dtype of the first argument; a file must be a [] or [1]\narray of that dtype (a "
        "path that reads as a number, e.g. '1e-3', is taken as the number: write ./1e-3 for the file).";
  }
  if (*d.notes) footer += std::string("\n") + d.notes;
  footer += "\nExit status: 0 success, 1 data or operator error, 2 usage error. Nothing is written on error.";
  c->footer(footer);
  const OpDesc* dp = &d;
  out->push_back({c, [o, dp] { return run_op(*dp, *o); }});
}

}  // namespace

void add_run_subcommands(CLI::App* run_cmd, std::vector<Subcommand>* out) {
  for (const OpDesc* d : ops::all_ops()) add_run(run_cmd, *d, out);
}

}  // namespace nnops::cli
