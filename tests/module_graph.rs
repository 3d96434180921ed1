//! The library's module graph has no cycle: at every level of the module
//! tree, the sibling modules depend on each other in one direction only.
//!
//! Dependencies are read from the source text: `use` trees and inline
//! `crate::`/`super::`/`self::` paths, comments and string literals removed,
//! `pub use` re-exports followed to the module that defines the item. A
//! reference from a module to its own ancestor or descendant is structure,
//! not a dependency between siblings, and is not counted; a reference from
//! `builtin::dtm50` to `builtin::generate` counts as dtm50 → generate inside
//! `builtin`, one from `tablebase` to `telemetry::probes` as tablebase →
//! telemetry at the top.

#[macro_use]
mod common;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

type ModPath = Vec<String>;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Punct(&'static str),
}

/// Identifiers and the punctuation that paths, use trees and module blocks
/// are made of; comments, strings, chars and everything else dropped.
fn tokens(src: &str) -> Vec<Tok> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if src[i..].starts_with("//") {
            i += src[i..].find('\n').unwrap_or(b.len() - i);
        } else if src[i..].starts_with("/*") {
            let mut depth = 0;
            while i < b.len() {
                if src[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if src[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'r'
            && (src[i..].starts_with("r#\"") || src[i..].starts_with("r\"") || src[i..].starts_with("r##\""))
        {
            let hashes = src[i + 1..].bytes().take_while(|&h| h == b'#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let start = i + 2 + hashes;
            i = start + src[start..].find(&close).expect("closed raw string") + close.len();
        } else if c == b'"' {
            i += 1;
            while b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if b[i + 1] == b'\\' {
                i += 3 + src[i + 3..].find('\'').unwrap() + 1;
            } else if b.get(i + 2) == Some(&b'\'') {
                i += 3;
            } else if let Some(ch) = src[i + 1..].chars().next().filter(|ch| !ch.is_ascii())
                && src[i + 1 + ch.len_utf8()..].starts_with('\'')
            {
                i += 2 + ch.len_utf8();
            } else {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            // Byte strings and raw identifiers: b"..", br"..", r#ident.
            out.push(Tok::Ident(src[start..i].to_owned()));
        } else if src[i..].starts_with("::") {
            out.push(Tok::Punct("::"));
            i += 2;
        } else {
            let p = match c {
                b'{' => Some("{"),
                b'}' => Some("}"),
                b',' => Some(","),
                b';' => Some(";"),
                b'*' => Some("*"),
                _ => None,
            };
            out.extend(p.map(Tok::Punct));
            i += 1;
        }
    }
    out
}

/// One file's module: the paths it uses (relative, as written) and what it
/// re-exports (name → path).
#[derive(Default)]
struct Module {
    uses: Vec<ModPath>,
    reexports: BTreeMap<String, ModPath>,
}

/// Expands a use tree starting at `toks[*i]` into full paths; `prefix` so
/// far. Returns (path, binding name) pairs.
fn use_tree(toks: &[Tok], i: &mut usize, prefix: &ModPath, out: &mut Vec<(ModPath, Option<String>)>) {
    let mut path = prefix.clone();
    loop {
        match &toks[*i] {
            Tok::Punct("{") => {
                *i += 1;
                while toks[*i] != Tok::Punct("}") {
                    use_tree(toks, i, &path, out);
                    if toks[*i] == Tok::Punct(",") {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            Tok::Punct("*") => {
                *i += 1;
                out.push((path, None));
                return;
            }
            Tok::Ident(s) if s == "self" && !path.is_empty() && prefix.len() == path.len() => {
                *i += 1;
                let name = path.last().cloned();
                out.push((path.clone(), name));
                return;
            }
            Tok::Ident(s) => {
                path.push(s.clone());
                *i += 1;
                if toks[*i] == Tok::Punct("::") {
                    *i += 1;
                    continue;
                }
                let mut name = path.last().cloned();
                if toks[*i] == Tok::Ident("as".into()) {
                    if let Tok::Ident(alias) = &toks[*i + 1] {
                        name = Some(alias.clone());
                    }
                    *i += 2;
                }
                out.push((path, name));
                return;
            }
            other => panic!("unexpected {other:?} in a use tree"),
        }
    }
}

fn parse(src: &str) -> Module {
    let toks = tokens(src);
    let mut m = Module::default();
    let mut i = 0;
    // Inline module blocks (`mod tests { .. }`) by the brace depth they
    // close at: their `super` is this file's module.
    let mut depth = 0;
    let mut inline: Vec<usize> = Vec::new();
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct("{") => depth += 1,
            Tok::Punct("}") => {
                depth -= 1;
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
            }
            Tok::Ident(s) if s == "mod" && toks.get(i + 2) == Some(&Tok::Punct("{")) => {
                inline.push(depth);
            }
            Tok::Ident(s) if s == "use" => {
                let public = i > 0 && toks[i - 1] == Tok::Ident("pub".into());
                i += 1;
                let mut paths = Vec::new();
                use_tree(&toks, &mut i, &Vec::new(), &mut paths);
                for (mut p, name) in paths {
                    // Inside an inline module, `super` is the file's module.
                    if !inline.is_empty() && p[0] == "super" {
                        p[0] = "self".into();
                    }
                    if public
                        && inline.is_empty()
                        && let Some(name) = name
                    {
                        m.reexports.insert(name, p.clone());
                    }
                    m.uses.push(p);
                }
                continue;
            }
            Tok::Ident(s)
                if ["crate", "super", "self"].contains(&s.as_str()) && toks.get(i + 1) == Some(&Tok::Punct("::")) =>
            {
                let mut p = vec![if !inline.is_empty() && s == "super" { "self".to_owned() } else { s.clone() }];
                while toks.get(i + 1) == Some(&Tok::Punct("::")) {
                    match toks.get(i + 2) {
                        Some(Tok::Ident(seg)) => p.push(seg.clone()),
                        _ => break,
                    }
                    i += 2;
                }
                m.uses.push(p);
            }
            _ => {}
        }
        i += 1;
    }
    m
}

/// Module path of a file under `src/` (`builtin/dtm50.rs` → builtin::dtm50).
fn module_path(rel: &Path) -> ModPath {
    let mut p: ModPath = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    let last = p.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        p.push(stem.to_owned());
    }
    p
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

struct Crate {
    modules: BTreeMap<ModPath, Module>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut all = Vec::new();
        files(src, &mut all);
        let mut modules = BTreeMap::new();
        for f in all {
            let rel = f.strip_prefix(src).unwrap();
            if rel == Path::new("main.rs") {
                continue; // the binary: another crate
            }
            modules.insert(module_path(rel), parse(&std::fs::read_to_string(&f).unwrap()));
        }
        Crate { modules }
    }

    /// The absolute path of `p` as written in module `at`, or None for
    /// another crate.
    fn absolute(&self, at: &ModPath, p: &ModPath) -> Option<ModPath> {
        let (mut base, rest) = match p[0].as_str() {
            "crate" => (Vec::new(), &p[1..]),
            "self" => (at.clone(), &p[1..]),
            "super" => {
                let mut base = at.clone();
                let mut k = 0;
                while p.get(k).is_some_and(|s| s == "super") {
                    base.pop();
                    k += 1;
                }
                (base, &p[k..])
            }
            first => {
                let mut child = at.clone();
                child.push(first.to_owned());
                if !self.modules.contains_key(&child) {
                    return None;
                }
                (at.clone(), &p[..])
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module that defines what absolute path `p` names, following
    /// `pub use` re-exports.
    fn defining_module(&self, mut p: ModPath) -> ModPath {
        for _ in 0..16 {
            let k = (0..=p.len()).rev().find(|&k| self.modules.contains_key(&p[..k])).unwrap();
            let module = p[..k].to_vec();
            let Some(name) = p.get(k) else { return module };
            match self.modules[&module].reexports.get(name).and_then(|r| self.absolute(&module, r)) {
                Some(target) if target != p => {
                    p = target.into_iter().chain(p[k + 1..].iter().cloned()).collect();
                }
                _ => return module,
            }
        }
        panic!("re-export loop at {}", p.join("::"))
    }

    /// Module-level dependencies: (from, to) with neither inside the other.
    fn edges(&self) -> BTreeSet<(ModPath, ModPath)> {
        let mut edges = BTreeSet::new();
        for (at, m) in &self.modules {
            for p in &m.uses {
                let Some(abs) = self.absolute(at, p) else { continue };
                let to = self.defining_module(abs);
                if !to.starts_with(at) && !at.starts_with(&to) {
                    edges.insert((at.clone(), to));
                }
            }
        }
        edges
    }
}

fn name(p: &[String]) -> String {
    if p.is_empty() { "crate".into() } else { p.join("::") }
}

/// Strongly connected components with more than one member (Tarjan).
fn cycles(nodes: &BTreeSet<String>, edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeSet<(String, String)>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        out: Vec<Vec<String>>,
    }
    fn visit(t: &mut T, v: &str) {
        let n = t.index.len();
        t.index.insert(v.to_owned(), n);
        t.low.insert(v.to_owned(), n);
        t.stack.push(v.to_owned());
        let next: Vec<String> = t.edges.iter().filter(|(a, _)| a == v).map(|(_, b)| b.clone()).collect();
        for w in next {
            if !t.index.contains_key(&w) {
                visit(t, &w);
                let l = t.low[v].min(t.low[&w]);
                t.low.insert(v.to_owned(), l);
            } else if t.stack.contains(&w) {
                let l = t.low[v].min(t.index[&w]);
                t.low.insert(v.to_owned(), l);
            }
        }
        if t.low[v] == t.index[v] {
            let at = t.stack.iter().position(|s| s == v).unwrap();
            let scc: Vec<String> = t.stack.drain(at..).collect();
            if scc.len() > 1 {
                t.out.push(scc);
            }
        }
    }
    let mut t = T { edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), out: Vec::new() };
    for v in nodes {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn module_graph_has_no_cycle() {
    // `TBSERVER_MODULE_GRAPH_SRC`: another source tree to judge (an older checkout).
    let src = std::env::var_os("TBSERVER_MODULE_GRAPH_SRC")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let krate = Crate::read(&src);
    let edges = krate.edges();
    // Per parent module: its children, and the edges between them with the
    // file-level references that make each one.
    let mut levels: BTreeMap<ModPath, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut why: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (from, to) in &edges {
        let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
        let (a, b) = (from[common].clone(), to[common].clone());
        levels.entry(from[..common].to_vec()).or_default().insert((a.clone(), b.clone()));
        why.entry((name(&from[..=common]), name(&to[..=common]))).or_default().push(format!(
            "{} -> {}",
            name(from),
            name(to)
        ));
    }
    let mut failures = Vec::new();
    for (parent, level) in &levels {
        let nodes: BTreeSet<String> = level.iter().flat_map(|(a, b)| [a.clone(), b.clone()]).collect();
        for scc in cycles(&nodes, level) {
            let mut lines = Vec::new();
            for (a, b) in level.iter().filter(|(a, b)| scc.contains(a) && scc.contains(b)) {
                let key = |m: &str| name(&parent.iter().cloned().chain([m.to_owned()]).collect::<Vec<_>>());
                lines.push(format!("  {a} -> {b}: {}", why[&(key(a), key(b))].join(", ")));
            }
            failures.push(format!("cycle in {} among {}:\n{}", name(parent), scc.join(", "), lines.join("\n")));
        }
    }
    report!(
        "module graph: {} modules, {} module-level dependencies, {} sibling edges on {} levels, {} cycles",
        krate.modules.len(),
        edges.len(),
        levels.values().map(|l| l.len()).sum::<usize>(),
        levels.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The reader itself must see the dependencies it is meant to judge.
    let has = |a: &str, b: &str| edges.iter().any(|(x, y)| name(x) == a && name(y) == b);
    assert!(
        has("tablebase", "search") && has("builtin::generate", "builtin::dtm50") && has("http", "probe"),
        "{edges:?}"
    );
}
