// importer/shell_eval.hpp: a launch script evaluated as bash would, without running it
// (issue #27 item 1). The expected values are what bash 5 prints for the same scripts.
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "importer/import.hpp"
#include "importer/shell_eval.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using Words = std::vector<std::string>;

namespace {
importer::ShellResult eval(const std::string& text, std::map<std::string, std::string> env = {}) {
  importer::ShellOptions o;
  o.script_path = "/scripts/run.sh";
  o.environment = std::move(env);
  return importer::evaluate_shell(text, o);
}
// The words of the last command (`printf`, say) run by a script.
Words last_words(const std::string& text) {
  const auto r = eval(text);
  REQUIRE_FALSE(r.commands.empty());
  return r.commands.back().words;
}
}  // namespace

TEST_CASE("shell: quoting, word splitting and arrays as bash expands them", "[config][shell]") {
  CHECK(last_words(R"(A="a  b"; f $A "$A" '$A' "x${A}y")") ==
        Words{"f", "a", "b", "a  b", "$A", "xa  by"});
  // An array built from a split and a quoted word: 3 elements.
  const std::string arr = "A=\"a b\"\nB=($A \"$A\"   # a comment\n   c)\n";
  CHECK(last_words(arr + R"(f "${B[@]}")") == Words{"f", "a", "b", "a b", "c"});
  CHECK(last_words(arr + R"(f ${B[@]})") == Words{"f", "a", "b", "a", "b", "c"});
  CHECK(last_words(arr + R"(f "${B[*]}")") == Words{"f", "a b a b c"});
  CHECK(last_words(arr + R"(f ${#B[@]} "${B[2]}" ${B[2]} $B)") ==
        Words{"f", "4", "a b", "a", "b", "a"});
  CHECK(last_words(arr + "B+=(d)\nf ${#B[@]}") == Words{"f", "5"});
  CHECK(last_words(R"(f "" x)") == Words{"f", "", "x"});  // a quoted empty word stays a word
  CHECK(last_words("E=\nf $E x") == Words{"f", "x"});     // an unquoted empty one does not
  CHECK(last_words("f a\\ b 'c d'\"e\"") == Words{"f", "a b", "c de"});
}

TEST_CASE("shell: defaults, arithmetic and positional parameters", "[config][shell]") {
  CHECK(last_words(R"(E=; f ${U:-d} ${E:-d} ${E-d} ${U-d} ${U:+x} ${E:+x} ${#L})") ==
        Words{"f", "d", "d", "d", "0"});
  CHECK(last_words("L=hello; f ${L:+x} ${#L} ${L:-d}") == Words{"f", "x", "5", "hello"});
  CHECK(last_words("f ${Z:=7}; g $Z") == Words{"g", "7"});
  CHECK(last_words("N=3; M=4; f $((N*(M+1)%7)) $(( $N - 10 )) $((-2*-3))") ==
        Words{"f", "1", "-7", "6"});
  // 64-bit arithmetic wraps as bash's does (the values bash 5 prints); INT64_MIN / -1 does
  // not trap (a fuzzed script found that it did, issue #46 item 5).
  CHECK(last_words("f $(( (-9223372036854775807-1) / -1 )) $(( (-9223372036854775807-1) % -1 )) "
                   "$((9223372036854775807+1)) $((9999999999999999999)) $((3037000500*3037000500)) "
                   "$(( - (-9223372036854775807-1) ))") ==
        Words{"f", "-9223372036854775808", "0", "-9223372036854775808", "-8446744073709551617",
              "-9223372036709301616", "-9223372036854775808"});
  CHECK(last_words("f ${99999999999999999999} ${0}") == Words{"f", "/scripts/run.sh"});
  CHECK(last_words("f $((1))x$((2)) $(( (1+2)*3 ))") == Words{"f", "1x2", "9"});
  importer::ShellOptions o;
  o.script_path = "run.sh";
  o.arguments = {"one", "two words"};
  const auto r = importer::evaluate_shell(R"(f $1 "$2" $3 $# "$@")", o);
  CHECK(r.commands.back().words == Words{"f", "one", "two words", "2", "one", "two words"});
}

TEST_CASE("shell: if on tests, exports, prefix assignments, and what is not run",
          "[config][shell]") {
  const std::string script = R"(
export CUDA_DEVICE_MAX_CONNECTIONS=1
N=${NODES:-2}
if [ "$N" -gt 4 ]; then
  MODE=big
elif [[ -n "$KEY" && $N -eq 2 ]]; then
  MODE=keyed
else
  MODE=small
fi
for i in 1 2; do
  f $i
done
HOST=$(hostname)
NCCL_DEBUG=INFO python train.py --mode $MODE --host "$HOST"
)";
  auto r = eval(script);
  REQUIRE(r.commands.size() == 1);  // the loop's body is skipped, not run
  CHECK(r.commands[0].words == Words{"python", "train.py", "--mode", "small", "--host", ""});
  CHECK(r.commands[0].prefix_env.at("NCCL_DEBUG") == "INFO");
  CHECK(r.exported.at("CUDA_DEVICE_MAX_CONNECTIONS") == "1");
  CHECK(r.exported.count("MODE") == 0);
  CHECK(r.variables.at("MODE") == "small");
  REQUIRE(r.notes.size() == 2);
  CHECK_THAT(r.notes[0], Catch::Contains("a `for` block is not evaluated"));
  CHECK_THAT(r.notes[1], Catch::Contains("$(hostname) is not run"));
  CHECK(eval(script, {{"KEY", "x"}}).variables.at("MODE") == "keyed");
  CHECK(eval(script, {{"NODES", "8"}}).variables.at("MODE") == "big");
  // A here-document sbatch or a shell reads is its script (sbatch <<EOF ... EOF); another
  // program's is input, not commands.
  const auto h = eval(
      "sbatch --nodes 2 <<EOF\n#!/bin/bash\nsrun python x.py --a 1\nEOF\ncat <<-'END' > f\n\tnot a "
      "command\n\tEND\nf done");
  REQUIRE(h.commands.size() == 4);
  CHECK(h.commands[0].words == Words{"sbatch", "--nodes", "2"});
  CHECK(h.commands[1].words == Words{"srun", "python", "x.py", "--a", "1"});
  CHECK(h.commands[2].words == Words{"cat"});
  CHECK(h.commands[3].words == Words{"f", "done"});
  // The script's folder for the usual idioms; nothing else is run.
  CHECK(last_words("D=$(cd \"$(dirname \"$0\")\" && pwd); f $D") == Words{"f", "/scripts"});
}

TEST_CASE("shell: && and || lists, groups, and the here-documents a job runs", "[config][shell]") {
  // Nothing is run: a command succeeds, as `$?` reads 0; a test and `false` decide.
  const auto r = eval(R"(X=1
[ -z "$X" ] && { echo missing; exit 1; }
mkdir -p /tmp/logs || {
    echo "cannot create"
    exit 1
}
false && f never
false || f fallback
true && f yes
[ "$X" = 2 ] || f not-two
f last
)");
  CHECK_FALSE(r.exited);
  std::vector<Words> words;
  for (const auto& c : r.commands) words.push_back(c.words);
  CHECK(words == std::vector<Words>{{"mkdir", "-p", "/tmp/logs"},
                                    {"f", "fallback"},
                                    {"f", "yes"},
                                    {"f", "not-two"},
                                    {"f", "last"}});
  // `! COMMAND` fails where the command succeeds; `! TEST` inverts the test.
  CHECK_FALSE(eval("! grep -q x f && exit 1\nf after").exited);
  CHECK(eval("X=1\n! [ -z \"$X\" ] && exit 1\nf after").exited);
  // The check that fails exits, as bash would.
  CHECK(eval("[ -z \"$Y\" ] && { echo missing; exit 1; }\nf after").exited);
  // An unquoted delimiter's body expands in the outer shell (\$ escapes); a quoted one
  // does not, and runs as written.
  const auto h = eval("A=hi\nsbatch <<EOF\nB=inner\nsrun f \"$A\" \\$B ${A}x\nEOF\n");
  REQUIRE(h.commands.size() == 2);
  CHECK(h.commands[1].words == Words{"srun", "f", "hi", "inner", "hix"});
  const auto q = eval("A=hi\nbash <<'EOF'\nf '$A' \"$A\"\nEOF\n");
  REQUIRE(q.commands.size() == 2);
  CHECK(q.commands[1].words == Words{"f", "$A", "hi"});
}

TEST_CASE("shell: sourced files next to the script, and bad scripts", "[config][shell]") {
  const test::TempFile main_script("", "run.sh");
  const auto dir = std::filesystem::path(main_script.path()).parent_path();
  std::ofstream(dir / "model.sh") << "MODEL_ARGS=(--num-layers 4 --hidden-size ${H:-64})\n";
  importer::ShellOptions o;
  o.script_path = main_script.path();
  const auto r = importer::evaluate_shell(
      "H=128\nsource model.sh\n. ./model.sh\npython x.py \"${MODEL_ARGS[@]}\"", o);
  CHECK(r.commands.back().words ==
        Words{"python", "x.py", "--num-layers", "4", "--hidden-size", "128"});
  const auto err = [&](const std::string& text, const std::string& says) {
    try {
      importer::evaluate_shell(text, o);
      FAIL("no error for: " << text);
    } catch (const config::InputError& e) {
      CHECK(e.file() == main_script.path());
      CHECK_THAT(e.message(), Catch::Contains(says));
    }
  };
  err("source missing.sh", "does not exist");
  // The folder "$(dirname "$0")" gives is the script's, however its path was given: a script
  // named by a relative path sources the file beside it, not one under a doubled path (a
  // fuzzed script found `s/run.sh` sourcing s/s/lib.sh).
  {
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(dir.parent_path());
    importer::ShellOptions rel;
    rel.script_path = (dir.filename() / "run.sh").string();
    const auto d = importer::evaluate_shell(
        ". \"$(dirname \"$0\")/model.sh\"\npython x.py \"${MODEL_ARGS[@]}\"\nf $(dirname $0)", rel);
    std::filesystem::current_path(cwd);
    CHECK(d.commands.front().words ==
          Words{"python", "x.py", "--num-layers", "4", "--hidden-size", "64"});
    CHECK(d.commands.back().words == Words{"f", dir.string()});
  }
  // The importer's reach (issue #46 item 2): only regular files inside the script's folder
  // tree or a --source-root, refused unread otherwise.
  err("source /etc/passwd", "/etc/passwd is outside the script's folder");
  err(". ../../../../../secret.env", "is outside the script's folder");
  const auto fifo = dir / fmt::format("fifo-{}.sh", ::getpid());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  err("source " + fifo.filename().string(), "is not a regular file");
  std::filesystem::remove(fifo);
  err("source " + dir.string(), "is a folder, not a file");
  {
    const auto outer = dir / fmt::format("moesim-source-{}", ::getpid());
    std::filesystem::create_directories(outer / "inner");
    std::ofstream(outer / "secret.env") << "TOKEN=hunter2\n";
    std::ofstream(outer / "inner" / "run.sh") << "";
    importer::ShellOptions inner;
    inner.script_path = (outer / "inner" / "run.sh").string();
    try {
      importer::evaluate_shell("source ../secret.env\npython x.py --foo-$TOKEN", inner);
      FAIL("a file outside the script's folder was read");
    } catch (const config::InputError& e) {
      CHECK_THAT(e.message(), Catch::Contains("secret.env is outside the script's folder"));
      CHECK_THAT(std::string(e.what()), !Catch::Contains("hunter2"));
    }
    inner.source_roots = {outer.string()};  // import --source-root
    const auto allowed =
        importer::evaluate_shell("source ../secret.env\npython x.py --foo-$TOKEN", inner);
    CHECK(allowed.commands.back().words == Words{"python", "x.py", "--foo-hunter2"});
    std::filesystem::remove_all(outer);
  }
  err("f \"a\nb", "line 1: unterminated double quote");
  err("x\nf 'a", "line 2: unterminated single quote");
  err("if [ 1 ]; then f", "`if` without `fi`");
  err("A=(a b", "without its closing ')'");
  err("f $((1/0))", "division by zero");
  // A quote left open inside ${...} (the fuzz target's: it looped for ever).
  err("V=${V:-'}\nf $V", "unterminated single quote");
  err("f \"${V:-`}\"", "unterminated backquote");
  err("\"800M\")\n  X=1\n  ;;\nf", "unexpected `;;`");  // a case's arm without its `case`
  err("cat <<EOF\nno end", "here-document without its closing 'EOF'");
  // Bounds (issue #46 item 1): nesting and value size, each refused with its limit named.
  std::string nested = "x";
  for (int i = 0; i < 10000; ++i) nested = "${X:-" + nested + "}";
  err("python x.py " + nested, "expansions nested more than 64 deep");
  std::string arith = "1";
  for (int i = 0; i < 10000; ++i) arith = "$(( " + arith + " ))";
  err("python x.py " + arith, "expansions nested more than 64 deep");
  err("python x.py $((" + std::string(5000, '(') + "1" + std::string(5000, ')') + "))",
      "nested more than 64 deep");
  err("python x.py $((" + std::string(5000, '-') + "1))", "nested more than 64 deep");
  std::string doubling = "A=xxxxxxxxxxxxxxxx\n";
  for (int i = 0; i < 40; ++i) doubling += "A=$A$A\n";
  err(doubling, "an expansion grows past 1024 KiB");
  // Many lines each copying a large value: refused once all expansions pass 256 MiB (it
  // took seconds a line before), and a script over 1 MiB is not read.
  std::string copies = "A=xxxxxxxxxxxxxxxx\n";
  for (int i = 0; i < 14; ++i) copies += "A=$A$A\n";  // 256 KiB
  for (int i = 0; i < 1000; ++i) copies += "B=$A$A$A\n";
  err(copies, "the script's expansions add up to more than 256 MiB");
  err("A=" + std::string((1 << 20) + 1, 'x'),
      "larger than the 1024 KiB moesim reads of a launch script");
  // Just inside the bounds it still evaluates: 60 levels, values of 512 KiB.
  std::string sixty = "ok";
  for (int i = 0; i < 60; ++i) sixty = "${X:-" + sixty + "}";
  CHECK(importer::evaluate_shell("python x.py " + sixty, o).commands.back().words ==
        Words{"python", "x.py", "ok"});
  std::string grow = "A=xxxxxxxxxxxxxxxx\n";
  for (int i = 0; i < 15; ++i) grow += "A=$A$A\n";  // 16 x 2^15 = 512 KiB
  CHECK(importer::evaluate_shell(grow, o).variables.at("A").size() == 16u << 15);
}

TEST_CASE("import megatron evaluates the launch script and lists every unknown flag",
          "[config][import][shell]") {
  // The outcome for every example script is in import_scripts_test.cpp; here what the
  // evaluation itself shows on one of them.
  // examples/llama/train_llama3_8b_h100_fp8.sh (@ d98e8a64): imports. The DTYPE `if` adds the
  // FP8 flags, the MOCK branch the vocabulary, and the check for pretrain_gpt.py passes.
  importer::MegatronImportOptions lopts{
      "h100",
      8,
      std::nullopt,
      std::nullopt,
      std::nullopt,
      test::source_path(
          "tests/data/megatron/lm-examples/examples/llama/train_llama3_8b_h100_fp8.sh"),
      {},
      std::nullopt,
      std::nullopt};
  const auto llama = importer::import_megatron(test::read_text(lopts.source), lopts);
  CHECK(llama.scenario["model"]["num_hidden_layers"] == 32);
  CHECK(llama.scenario["model"]["vocab_size"] == 128256);
  CHECK(llama.scenario["training"]["seq_length"] == 8192);
  CHECK(llama.scenario["training"]["precision"] == "fp8-delayed");
  CHECK(llama.scenario["framework"]["fp8_param_gather"] == true);
  REQUIRE(llama.notes.size() == 1);
  CHECK_THAT(llama.notes[0],
             Catch::Contains("'-f pretrain_gpt.py' is not evaluated: taken as true"));
  // Several unknown flags: all of them in one message.
  importer::MegatronImportOptions opts{
      "h100",       8,        std::nullopt, std::string("mixtral-8x7b"),
      std::nullopt, "run.sh", {},           std::nullopt,
      std::nullopt};
  try {
    importer::import_megatron(
        "A=(--tensor-model-parallel-size 1 --made-up-one 3)\npython pretrain_gpt.py \"${A[@]}\" "
        "--made-up-two --made-up-one 4",
        opts);
    FAIL("no error");
  } catch (const config::InputError& e) {
    CHECK(e.path() == "--made-up-one");
    CHECK_THAT(e.message(), Catch::Contains("unknown Megatron flags") &&
                                Catch::Contains("(all 2: --made-up-one, --made-up-two)"));
  }
}

TEST_CASE("import megatron: the embedding and the loss counted in the pipeline split",
          "[config][import]") {
  // Qwen3-235B-A22B's 94 layers + E + L = 96 units over PP8 x VPP4: 3 a virtual stage, the
  // first building 2 decoder layers after the embedding, the last 2 before the loss.
  importer::MegatronImportOptions opts{
      "h100", 256,          std::nullopt, std::string("qwen3-235b-a22b"), std::nullopt, "<args>",
      {},     std::nullopt, std::nullopt};
  const std::string base =
      "pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 8 "
      "--expert-model-parallel-size 8 "
      "--seq-length 4096 --micro-batch-size 1 --global-batch-size 1024 --bf16 --sequence-parallel "
      "--moe-grouped-gemm "
      "--account-for-embedding-in-pipeline-split ";
  const auto imp = importer::import_megatron(
      base + "--num-virtual-stages-per-pipeline-rank 4 --account-for-loss-in-pipeline-split", opts);
  std::string expected = "Ett";
  for (int s = 1; s < 31; ++s) expected += "|ttt";
  expected += "|ttL";
  CHECK(imp.scenario["parallelism"]["pp_layout"] == expected);
  CHECK(imp.scenario["parallelism"]["vpp"] == 4);
  // 94 + 1 units over 8 stages: Megatron refuses it, and so does the import.
  try {
    importer::import_megatron(base, opts);
    FAIL("no error");
  } catch (const config::InputError& e) {
    CHECK(e.path() == "--account-for-embedding-in-pipeline-split");
    CHECK_THAT(e.message(),
               Catch::Contains("94 layers + the embedding do not divide into 8 virtual stages"));
  }
}

TEST_CASE(
    "shell: what the example scripts need (issue #27): $?, continued lines in quotes, empty "
    "operands, exit",
    "[config][shell]") {
  // Nothing runs, so `$?` after `which srun` is 0 (said in the notes): BATCH=$((1-$?)) is 1.
  const auto st = eval("which srun\nBATCH=$((1-$?))\nf $BATCH");
  CHECK(st.commands.back().words == Words{"f", "1"});
  CHECK_THAT(st.notes.back(), Catch::Contains("'$?' is taken as 0"));
  // A backslash-newline inside double quotes joins the lines (bash removes both).
  CHECK(last_words("O=\"--a 1 \\\n --b 2\"\nf $O") == Words{"f", "--a", "1", "--b", "2"});
  // [[ $UNSET -eq 0 ]]: the empty operand is arithmetic 0, as bash's [[ ]] reads it.
  CHECK(last_words("if [[ $BATCH -eq 0 ]]; then f yes; else f no; fi") == Words{"f", "yes"});
  // Each command carries the environment it runs with: exports so far and its prefix.
  const auto env = eval("export A=1\nB=2 f\nexport A=3\nC=4 g");
  REQUIRE(env.commands.size() == 2);
  CHECK(env.commands[0].environment == std::map<std::string, std::string>{{"A", "1"}, {"B", "2"}});
  CHECK(env.commands[1].environment == std::map<std::string, std::string>{{"A", "3"}, {"C", "4"}});
  // `exit` (a check on a variable the script expects) is reported.
  CHECK(eval("if [[ -z $WS ]]; then exit 1; fi\nf").exited);
  CHECK_FALSE(eval("if [[ -z $WS ]]; then exit 1; fi\nf", {{"WS", "/w"}}).exited);
}

TEST_CASE("import megatron: runs inside sh -c, modules after -m, non-Megatron commands skipped",
          "[config][import][shell]") {
  importer::MegatronImportOptions o;
  o.system = "h100";
  o.gpus = 8;
  o.model = "mixtral-8x7b";
  const std::string flags =
      "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 "
      "--expert-model-parallel-size 8 "
      "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
      "--group-query-attention "
      "--num-query-groups 8 --num-experts 8 --moe-router-topk 2 --moe-grouped-gemm --swiglu "
      "--seq-length 4096 "
      "--micro-batch-size 1 --global-batch-size 256 --bf16 --untie-embeddings-and-output-weights "
      "--moe-token-dispatcher-type alltoall";
  // srun ... sh -c "CMD": CMD is evaluated in the command's environment.
  const auto nested =
      importer::import_megatron("R=\"python -u pretrain_gpt.py " + flags +
                                    "\"\nsrun -l --verbose sh -c \"echo ${R}; ${R}\"\n",
                                o);
  CHECK(nested.scenario["parallelism"]["ep"] == 8);
  // python -m torch.distributed.run ... -m pkg.prog: the program is pkg/prog.py.
  try {
    importer::import_megatron(
        "python -m torch.distributed.run --nproc-per-node 8 -m examples.mimo.pretrain_mimo " +
            flags,
        o);
    FAIL("imported");
  } catch (const config::InputError& e) {
    CHECK(e.path() == "examples/mimo/pretrain_mimo.py");
  }
  // torchrun's --nnodes x --nproc_per_node is the world size when --gpus is not given.
  o.gpus = 0;
  const auto tr = importer::import_megatron(
      "torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py " + flags, o);
  CHECK(tr.scenario["gpus"] == 16);
  CHECK_THROWS_WITH(importer::import_megatron("python pretrain_gpt.py " + flags, o),
                    Catch::Contains("world size"));
}
