// The schema types values by field, never by how the text looks.
#include "helpers.h"
#include "schema/schema.h"

using namespace qr;
using qr::test::compiler;
using qr::test::error_of;

namespace {

Value coerce(const std::string& text, const std::string& type,
             const std::string& profile = "pinned") {
  return compiler().schema().parse_value(text, *parse_type(type), "f", profile, "t");
}

} // namespace

TEST_CASE("type notation parses unions, nullables, containers and choices") {
  const TypePtr t = parse_type("list<enum<CudaGraphModule>> | 'full' | null");
  REQUIRE(t->kind == Type::Kind::Union);
  CHECK(t->alts.size() == 3);
  CHECK(t->accepts_null());
  CHECK(parse_type("int?")->accepts_null());
  CHECK(parse_type("str{none|off-by-one}")->choices ==
        std::vector<std::string>{"none", "off-by-one"});
  CHECK_THAT(error_of([] { parse_type("lst<int>"); }), Catch::Contains("unknown type 'lst'"));
  CHECK_THAT(error_of([] { parse_type("list<int"); }), Catch::Contains("expected '>'"));
}

TEST_CASE("values are typed by the field's type") {
  CHECK(coerce("1e-8", "float") == Value(1e-8));
  CHECK(coerce("3", "float") == Value(3.0));
  CHECK(coerce("yes", "str") == Value("yes"));
  CHECK(coerce("0.10", "str") == Value("0.10"));
  CHECK(coerce("'1'", "int | str") == Value("1"));
  CHECK(coerce("1", "int | str") == Value(1));
  CHECK(coerce("expandable_segments:True", "int | str") == Value("expandable_segments:True"));
  CHECK(coerce("true", "bool") == Value(true));
  CHECK(coerce("null", "int?").is_null());
  CHECK(coerce("bfloat16", "dtype") == Schema::dtype_value("torch.bfloat16"));
  CHECK(coerce("[attn, moe_router]", "list<enum<CudaGraphModule>>") ==
        Value(List{compiler().schema().enum_value("CudaGraphModule", "attn"),
                   compiler().schema().enum_value("CudaGraphModule", "moe_router")}));
  CHECK(coerce("CudaGraphModule.mlp", "enum<CudaGraphModule>") ==
        compiler().schema().enum_value("CudaGraphModule", "mlp"));
}

TEST_CASE("wrong types name the field, the expected type and the token") {
  CHECK_THAT(error_of([] { coerce("abc", "int"); }),
             Catch::Contains("'f': expected int, got 'abc'"));
  CHECK_THAT(error_of([] { coerce("4.0", "int"); }), Catch::Contains("expected int, got '4.0'"));
  CHECK_THAT(error_of([] { coerce("maybe", "bool"); }), Catch::Contains("expected bool"));
  CHECK_THAT(error_of([] { coerce("tranformer_engine", "str{none|transformer_engine}"); }),
             Catch::Contains("did you mean 'transformer_engine'"));
  CHECK_THAT(error_of([] { coerce("atn", "enum<CudaGraphModule>"); }),
             Catch::Contains("not a member of CudaGraphModule") &&
                 Catch::Contains("did you mean 'attn'"));
  CHECK_THAT(error_of([] { coerce("bfloat61", "dtype"); }), Catch::Contains("not a torch dtype"));
  CHECK_THAT(error_of([] { coerce("[1]", "int"); }), Catch::Contains("expected int, got a list"));
}

TEST_CASE("every section instantiates with a _target_ and every field of its profile") {
  const Schema& s = compiler().schema();
  const Value root = s.instantiate(s.root(), "pinned");
  CHECK(root.target() == "megatron.bridge.training.config.ConfigContainer");
  CHECK(root.as_map().find("train")->target() == "megatron.bridge.training.config.TrainingConfig");
  const ClassSpec* qwen35 = s.class_by_target(
      "megatron.bridge.models.qwen_vl.qwen35_vl_provider.Qwen35VLMoEModelProvider");
  REQUIRE(qwen35 != nullptr);
  const Value pinned = s.instantiate(*qwen35, "pinned");
  const Value gdn = s.instantiate(*qwen35, "gdn");
  CHECK(pinned.as_map().find("gdn_kernel_backend") == nullptr);
  CHECK(*gdn.as_map().find("gdn_kernel_backend") == Value("fla"));
  CHECK(*pinned.as_map().find("cuda_graph_modules") == Value("full"));
  CHECK(s.check(pinned, *parse_type("section<QwenVLMoEProvider>"), "pinned").empty());
}

TEST_CASE("unknown fields in a base file are errors with a hint") {
  const std::string path = (test::scratch_dir() / "bad_base.yaml").string();
  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("model:\n  _target_: "
               "megatron.bridge.models.qwen_vl.qwen35_vl_provider.Qwen35VLMoEModelProvider\n"
               "  hiden_size: 4\n",
               f);
    std::fclose(f);
  }
  CHECK_THAT(
      error_of([&] { (void)compiler().catalog().base_from_file(path, "pinned"); }),
      Catch::Contains("bad_base.yaml:3:3: 'model.hiden_size': Qwen35VLMoEModelProvider has no "
                      "field 'hiden_size' (did you mean 'hidden_size'?)"));
}

TEST_CASE("parse_value: text typed by the field, errors naming the source and the path") {
  const Schema& schema = compiler().schema();
  CHECK(schema.parse_value("2", *parse_type("float"), "train.x", "pinned", "override 'x=2'") ==
        Value(2.0));
  CHECK(schema.parse_value("[a, 1]", *parse_type("list<str>"), "p", "pinned", "o") ==
        Value(List{Value(std::string("a")), Value(std::string("1"))}));
  CHECK_THAT(error_of([&] {
               (void)schema.parse_value("[1", *parse_type("list<int>"), "p", "pinned",
                                        "src 'p=[1'");
             }),
             Catch::StartsWith("src 'p=[1'"));
  CHECK_THAT(error_of([&] {
               (void)schema.parse_value("abc", *parse_type("int"), "train.iters", "pinned", "s");
             }),
             Catch::Contains("train.iters"));
}
