// `nnops run <operator>`: reads the inputs from .npy files, validates everything (files, then the
// operator's own check) before creating any file, runs the operator in memory, and only then writes the
// outputs, each through a temporary file and a rename (atomic_file.hpp).
//
// Exit status: 0 success; 1 data or operator error (missing or bad file, the operator's check, I/O);
// 2 usage error (reported by CLI11 in main.cpp). Every error is one line on stderr.
#include "tools/cli/run.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "nnops/nnops.hpp"
#include "tools/cli/atomic_file.hpp"
#include "tools/cli/npy.hpp"

namespace nnops::cli {
namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "nnops: error: %s\n", msg.c_str());
  return 1;
}

void note(const std::string& msg) { std::fprintf(stderr, "nnops: note: %s\n", msg.c_str()); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

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

// ---------------------------------------------------------------------------------------------------
// group_normalization_grad

struct GnRun {
  std::string x, dy, gamma, mean, rstd, dx;
  bool force = false;
  int threads = 0;
};

int run_group_normalization_grad(const GnRun& o) {
  // Cheapest refusal first: an existing output without --force.
  if (!o.force && exists(o.dx)) return fail("--dx " + o.dx + ": the file exists; pass --force to replace it");

  NpyArray x, dy, gamma, mean, rstd;
  if (Status s = load("--x", o.x, &x); !s) return fail(s.message());
  if (Status s = load("--dy", o.dy, &dy); !s) return fail(s.message());
  if (Status s = load("--gamma", o.gamma, &gamma); !s) return fail(s.message());
  if (Status s = load("--mean", o.mean, &mean); !s) return fail(s.message());
  if (Status s = load("--rstd", o.rstd, &rstd); !s) return fail(s.message());

  // The operator lets dx share dy's buffer (in place) and no other input's; the files follow the same rule
  // so that a slip of the keyboard cannot replace x or the statistics.
  for (const auto& [opt, path] : {std::pair{"--x", &o.x}, std::pair{"--gamma", &o.gamma}, std::pair{"--mean", &o.mean},
                                  std::pair{"--rstd", &o.rstd}}) {
    if (same_file(o.dx, *path)) {
      return fail("--dx " + o.dx + " is the same file as " + opt + "; only --dy may be replaced by the result");
    }
  }

  NpyArray dx;
  dx.dtype = x.dtype;
  dx.shape = x.shape;
  dx.numel = x.numel;
  if (Status s = dx.data.allocate(dx.bytes()); !s) return fail(s.message());
  const Context ctx{o.threads};
  if (Status s = group_normalization_grad(x.view(), dy.view(), gamma.view(), mean.view(), rstd.view(), dx.view(), ctx);
      !s) {
    return fail(s.message());
  }

  AtomicFile out;
  if (Status s = out.open(o.dx, o.force ? AtomicFile::Mode::kReplace : AtomicFile::Mode::kCreate); !s) {
    return fail("--dx " + s.message());
  }
  if (Status s = write_npy(&out, dx.dtype, dx.shape, dx.data.data(), dx.bytes()); !s) return fail(s.message());
  crash_hook("1");
  if (Status s = out.commit(); !s) return fail("--dx " + s.message());
  std::printf("group_normalization_grad: wrote %s (%s %s)\n", o.dx.c_str(), dtype_name(dx.dtype),
              shape_text(dx.shape).c_str());
  return 0;
}

void add_run_group_normalization_grad(CLI::App* run, std::vector<Subcommand>* out) {
  auto o = std::make_shared<GnRun>();
  CLI::App* c = run->add_subcommand(
      "group_normalization_grad",
      "dx of group normalization as CANN computes it: per group of M elements, "
      "dx = (rstd/M) * gamma * (M*dy - sum(dy*gamma) - xhat*sum(dy*gamma*xhat)), xhat = (x - mean)*rstd");
  c->add_option("--x", o->x, "Input x, [N, G, d2, ...] (rank >= 3), float32/float16/bfloat16")
      ->required()
      ->type_name("FILE");
  c->add_option("--dy", o->dy, "Gradient of the output, shape and dtype of x")->required()->type_name("FILE");
  c->add_option("--gamma", o->gamma, "Scale, already broadcast to the shape of x; dtype of x")
      ->required()
      ->type_name("FILE");
  c->add_option("--mean", o->mean, "Group means, [N, G], dtype of x or float32")->required()->type_name("FILE");
  c->add_option("--rstd", o->rstd, "Group 1/sqrt(var + eps), [N, G], dtype of mean")->required()->type_name("FILE");
  c->add_option("--dx", o->dx, "Output file (refused if it exists, unless --force; may be the --dy file)")
      ->required()
      ->type_name("FILE");
  c->add_flag("--force", o->force, "Replace an existing --dx file (atomically: temporary file + rename)");
  c->add_option("--threads", o->threads, "Threads (default: NNOPS_NUM_THREADS or all cores); results are identical")
      ->check(CLI::Range(0, 4096));
  c->footer(
      "Example:\n"
      "  nnops run group_normalization_grad --x x.npy --dy dy.npy --gamma gamma.npy \\\n"
      "      --mean mean.npy --rstd rstd.npy --dx dx.npy\n"
      "Inputs: .npy 1.0/2.0/3.0, '<f4', '<f2' or bfloat16 ('<V2', as np.save writes ml_dtypes.bfloat16);\n"
      "big-endian and Fortran-order arrays are converted (with a note). dx.npy is written as np.save would\n"
      "write it (little-endian, C order). NB: the formula equals the true GroupNorm input gradient only when\n"
      "gamma is all ones (SPEC.md 1).\n"
      "Exit status: 0 success, 1 data or operator error, 2 usage error. Nothing is written on error.");
  out->push_back({c, [o] { return run_group_normalization_grad(*o); }});
}

// ---------------------------------------------------------------------------------------------------
// inplace_apply_power_sign

struct PsRun {
  std::string var, m, grad, lr, logbase, sign_decay, beta;
  bool use_locking = false;
  int64_t steps = 1;
  int threads = 0;
};

// A whole string that strtod reads as a number (decimal, exponent, hex, inf, nan).
bool parse_number(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// A scalar argument: a number rounded to `dtype` as a [] array, or an .npy file.
struct ScalarArg {
  const char* option;  // "--lr"
  const char* name;    // "lr", as the operator's messages call it
  const std::string* text;
  NpyArray array;
  bool from_number = false;
  double given = 0, rounded = 0;
};

Status load_scalar(ScalarArg* a, DType dtype) {
  double v = 0;
  if (!parse_number(*a->text, &v)) return load(a->option, *a->text, &a->array);
  a->from_number = true;
  a->given = v;
  a->array.dtype = dtype;
  a->array.shape = {};
  a->array.numel = 1;
  if (Status s = a->array.data.allocate(dtype_size(dtype)); !s) return s;
  store_from_double(a->array.data.data(), dtype, 0, v);
  a->rounded = load_as_double(a->array.data.data(), dtype, 0);
  return Status::ok();
}

std::string format_g(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

int run_inplace_apply_power_sign(const PsRun& o) {
  NpyArray var, m, grad;
  if (Status s = load("--var", o.var, &var); !s) return fail(s.message());
  if (Status s = load("--m", o.m, &m); !s) return fail(s.message());
  if (Status s = load("--grad", o.grad, &grad); !s) return fail(s.message());
  // Loaded into separate buffers the operator could not see that var and m are one file: both updates
  // would be computed and the second rename would silently drop the first.
  if (same_file(o.var, o.m)) return fail("--var " + o.var + " and --m " + o.m + " are the same file");
  if (same_file(o.var, o.grad)) return fail("--var " + o.var + " and --grad " + o.grad + " are the same file");
  if (same_file(o.m, o.grad)) return fail("--m " + o.m + " and --grad " + o.grad + " are the same file");

  ScalarArg scalars[4] = {{"--lr", "lr", &o.lr, {}},
                          {"--logbase", "logbase", &o.logbase, {}},
                          {"--sign-decay", "sign_decay", &o.sign_decay, {}},
                          {"--beta", "beta", &o.beta, {}}};
  for (ScalarArg& a : scalars) {
    if (Status s = load_scalar(&a, var.dtype); !s) return fail(s.message());
  }

  const Context ctx{o.threads};
  for (int64_t step = 0; step < o.steps; ++step) {
    Status s =
        inplace_apply_power_sign(var.view(), m.view(), scalars[0].array.view(), scalars[1].array.view(),
                                 scalars[2].array.view(), scalars[3].array.view(), grad.view(), o.use_locking, ctx);
    if (!s) {
      // "beta is 1; expected a value in [0, 1)" puzzles a user who typed 0.9999 for a bfloat16 var: say so.
      std::string msg = s.message();
      for (const ScalarArg& a : scalars) {
        const bool changed = a.given != a.rounded && !(std::isnan(a.given) && std::isnan(a.rounded));
        if (a.from_number && changed && msg.find(std::string(a.name) + " is ") != std::string::npos) {
          msg += " (" + std::string(a.option) + " " + *a.text + " rounds to " + format_g(a.rounded) + " in " +
                 dtype_name(var.dtype) + ")";
        }
      }
      return fail(msg);
    }
  }
  for (const ScalarArg& a : scalars) {
    if (a.from_number && a.given != 0 && a.rounded == 0) {
      note(std::string(a.option) + " " + *a.text + " rounds to 0 in " + dtype_name(var.dtype));
    }
  }
  if (var.numel == 0) {
    std::printf("inplace_apply_power_sign: %s and %s are empty; nothing to update\n", o.var.c_str(), o.m.c_str());
    return 0;
  }

  // Both temporaries are written and flushed before either rename, so the window in which var is new and
  // m old is two rename() calls long.
  AtomicFile fv, fm;
  if (Status s = fv.open(o.var, AtomicFile::Mode::kReplace); !s) return fail("--var " + s.message());
  if (Status s = fm.open(o.m, AtomicFile::Mode::kReplace); !s) return fail("--m " + s.message());
  if (Status s = write_npy(&fv, var.dtype, var.shape, var.data.data(), var.bytes()); !s) return fail(s.message());
  if (Status s = write_npy(&fm, m.dtype, m.shape, m.data.data(), m.bytes()); !s) return fail(s.message());
  crash_hook("1");
  if (Status s = fv.commit(); !s) return fail("--var " + s.message() + "; " + o.var + " and " + o.m + " are unchanged");
  crash_hook("2");
  if (Status s = fm.commit(); !s) {
    return fail("--m " + s.message() + "; " + o.var + " was updated but " + o.m + " was not");
  }
  std::printf("inplace_apply_power_sign: updated %s and %s (%s %s, %lld step%s)\n", o.var.c_str(), o.m.c_str(),
              dtype_name(var.dtype), shape_text(var.shape).c_str(), static_cast<long long>(o.steps),
              o.steps == 1 ? "" : "s");
  return 0;
}

void add_run_inplace_apply_power_sign(CLI::App* run, std::vector<Subcommand>* out) {
  auto o = std::make_shared<PsRun>();
  CLI::App* c = run->add_subcommand(
      "inplace_apply_power_sign",
      "One PowerSign optimizer step, updating var.npy and m.npy in place: m = beta*m + (1-beta)*grad; "
      "var -= lr * exp(logbase * sign_decay * sign(m)*sign(grad)) * grad");
  c->add_option("--var", o->var, "Variable, any shape; float32/float16/bfloat16; updated in place")
      ->required()
      ->type_name("FILE");
  c->add_option("--m", o->m, "Momentum, shape and dtype of var; updated in place")->required()->type_name("FILE");
  c->add_option("--grad", o->grad, "Gradient, shape and dtype of var")->required()->type_name("FILE");
  c->add_option("--lr", o->lr, "Learning rate: a number or a one-element .npy file")->required()->type_name("NUM|FILE");
  c->add_option("--logbase", o->logbase, "Log base: a number or a one-element .npy file")
      ->required()
      ->type_name("NUM|FILE");
  c->add_option("--sign-decay,--sign_decay", o->sign_decay, "Sign decay: a number or a one-element .npy file")
      ->required()
      ->type_name("NUM|FILE");
  c->add_option("--beta", o->beta, "Momentum decay in [0, 1): a number or a one-element .npy file")
      ->required()
      ->type_name("NUM|FILE");
  c->add_flag("--use-locking,--use_locking", o->use_locking,
              "Serialize concurrent updates of var (as in TensorFlow; one process has no concurrent callers)");
  c->add_option("--steps", o->steps, "Apply the step K times with the same grad before writing (default 1)")
      ->type_name("K")
      ->check(CLI::PositiveNumber);
  c->add_option("--threads", o->threads, "Threads (default: NNOPS_NUM_THREADS or all cores); results are identical")
      ->check(CLI::Range(0, 4096));
  c->footer(
      "Example:\n"
      "  nnops run inplace_apply_power_sign --var var.npy --m m.npy --grad grad.npy \\\n"
      "      --lr 0.001 --logbase 1.0 --sign-decay 0.99 --beta 0.9\n"
      "Numbers are rounded to var's dtype; a file must be a [] or [1] array of var's dtype (a path that reads\n"
      "as a number, e.g. '1e-3', is taken as the number: write ./1e-3 for the file). var.npy and m.npy are\n"
      "each replaced atomically (temporary file, fsync, rename): both temporaries are written before either\n"
      "rename, and a kill between the two renames leaves var new and m old, each a whole file. The files\n"
      "are rewritten as np.save writes them (little-endian, C order, format 1.0).\n"
      "Exit status: 0 success, 1 data or operator error, 2 usage error. Nothing is written on error.");
  out->push_back({c, [o] { return run_inplace_apply_power_sign(*o); }});
}

}  // namespace

void add_run_subcommands(CLI::App* run_cmd, std::vector<Subcommand>* out) {
  // One `run` subcommand per operator of the list: an operator added there without its command-line
  // front end here fails to compile.
#define NNOPS_OP(name, category, op_type) add_run_##name(run_cmd, out);
#include "src/ops/op_list.inc"
#undef NNOPS_OP
}

}  // namespace nnops::cli
