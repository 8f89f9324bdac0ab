//! Keeps the opcode table in `docs/bytecode.md` equal to THE opcode table in `vm_ir::opcode`.
//! Run with `UPDATE_DOCS=1` to rewrite the table in the document.

use vm_ir::opcode::{Kind, Opcode, TypeRule};

const BEGIN: &str = "<!-- BEGIN OPCODE TABLE (generated from vm/ir/src/opcode.rs by `UPDATE_DOCS=1 cargo test -p vm-ir --test opcode_docs`) -->";
const END: &str = "<!-- END OPCODE TABLE -->";

fn operands(op: Opcode) -> String {
    let base = match op.kind() {
        Kind::Unary => "out, a",
        Kind::Binary => "out, a, b",
        Kind::Select => "out, cond, a, b",
        Kind::Reduce | Kind::Accumulate | Kind::Sort => "out, a, axis:i64",
        Kind::Range => "out",
        Kind::Random => "out, seed:u64, offset:u64",
        Kind::Gather => "out, src, index",
        Kind::Search => "out, sorted, keys",
        Kind::Scatter => "dst, src, index",
        Kind::System => "view",
        Kind::Nothing => "",
        Kind::Extension => "...",
    };
    base.to_string()
}

fn dtypes(op: Opcode) -> String {
    match op.type_rule() {
        TypeRule::Same(s) => s.describe().to_string(),
        TypeRule::ToBool(s) => format!("{} -> bool", s.describe()),
        TypeRule::ToPosition(s) => format!("{} -> i64", s.describe()),
        TypeRule::Cast => "any -> any".into(),
        TypeRule::Generate(s) => s.describe().to_string(),
        TypeRule::Select => "cond bool; a, b, out alike".into(),
        TypeRule::Indexed => "any; index integer".into(),
        TypeRule::Any => "any".into(),
    }
}

fn render() -> String {
    let mut s = String::from("| id | mnemonic | operands | dtypes | meaning |\n|---:|---|---|---|---|\n");
    for &op in Opcode::ALL {
        s += &format!("| {} | `{}` | `{}` | {} | {} |\n", op.id(), op.name(), operands(op), dtypes(op), op.summary());
    }
    s
}

#[test]
fn docs_opcode_table_matches_the_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bytecode.md");
    let doc = std::fs::read_to_string(path).expect("docs/bytecode.md exists");
    let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("docs/bytecode.md lacks the generated-table markers");
    };
    let current = &doc[b + BEGIN.len()..e];
    let wanted = format!("\n{}", render());
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let updated = format!("{}{}{}", &doc[..b + BEGIN.len()], wanted, &doc[e..]);
        std::fs::write(path, updated).unwrap();
    } else {
        assert_eq!(
            current, wanted,
            "docs/bytecode.md is stale: run UPDATE_DOCS=1 cargo test -p vm-ir --test opcode_docs"
        );
    }
}
