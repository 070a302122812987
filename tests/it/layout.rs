//! The crate's layout, checked from its source: no import cycles between modules, and
//! the domain modules stay free of the daemon's.
//!
//! A module's dependencies are the `crate::`, `super::` and `self::` paths in its file
//! (tests left out), each resolved to the longest module it names. Two modules are in
//! a cycle when, seen as children of their nearest common parent (each child standing
//! for its whole subtree), each reaches the other. A child using its parent's items is
//! not counted: that is how Rust modules share what their parent defines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

type Module = Vec<String>;

/// Every module of the crate by its path, with its source (tests cut off).
fn modules() -> BTreeMap<Module, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut all = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap().with_extension("");
        let mut module: Module = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if matches!(
            module.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            module.pop();
        }
        let source = std::fs::read_to_string(&file).unwrap();
        let source = match source.find("#[cfg(test)]\nmod tests") {
            Some(at) => source[..at].to_string(),
            None => source,
        };
        let source: String = source
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        all.insert(module, source);
    }
    all
}

/// Which module each module uses (itself excluded).
fn edges(modules: &BTreeMap<Module, String>) -> BTreeSet<(Module, Module)> {
    let path = Regex::new(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)").unwrap();
    let group =
        Regex::new(r"(?s)\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{(.*?)\};").unwrap();
    let nested = Regex::new(r"\{[^{}]*\}").unwrap();
    let resolve = |path: &[String]| -> Module {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|m| modules.contains_key(m))
            .unwrap_or_default()
    };
    let mut edges = BTreeSet::new();
    for (module, source) in modules {
        let base = |kind: &str, rest: &str| -> Module {
            let mut base = match kind {
                "crate" => Vec::new(),
                "self" => module.clone(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            let mut words = rest.split("::").filter(|w| !w.is_empty()).peekable();
            while words.peek() == Some(&"super") {
                words.next();
                base.pop();
            }
            base.extend(words.map(str::to_string));
            base
        };
        let mut targets: Vec<Module> = path
            .captures_iter(source)
            .map(|c| base(&c[1], &c[2]))
            .collect();
        for c in group.captures_iter(source) {
            let prefix = base(&c[1], &c[2]);
            let inner = nested.replace_all(&c[3], "");
            for item in inner.split(',') {
                let item = item.split(" as ").next().unwrap_or("").trim();
                if !item.is_empty() {
                    let mut t = prefix.clone();
                    t.extend(item.split("::").map(str::to_string));
                    targets.push(t);
                }
            }
        }
        for t in targets {
            let to = resolve(&t);
            if &to != module {
                edges.insert((module.clone(), to));
            }
        }
    }
    edges
}

/// The cycles among siblings: for each parent, the strongly connected groups of its
/// children with more than one member.
fn cycles(edges: &BTreeSet<(Module, Module)>) -> Vec<String> {
    let mut graphs: BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (a, b) in edges {
        let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        if common == a.len() || common == b.len() {
            continue; // a parent and its child
        }
        graphs
            .entry(a[..common].to_vec())
            .or_default()
            .entry(a[common].clone())
            .or_default()
            .insert(b[common].clone());
    }
    let mut found = Vec::new();
    for (parent, graph) in &graphs {
        let reach = |from: &str| -> BTreeSet<String> {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from.to_string()];
            while let Some(n) = todo.pop() {
                for m in graph.get(&n).into_iter().flatten() {
                    if seen.insert(m.clone()) {
                        todo.push(m.clone());
                    }
                }
            }
            seen
        };
        let mut done = BTreeSet::new();
        for node in graph.keys() {
            if done.contains(node) {
                continue;
            }
            let forward = reach(node);
            let group: BTreeSet<String> = forward
                .iter()
                .filter(|m| *m == node || reach(m).contains(node))
                .cloned()
                .chain(forward.contains(node).then(|| node.clone()))
                .collect();
            if group.len() > 1 {
                done.extend(group.iter().cloned());
                let name = if parent.is_empty() {
                    "crate".to_string()
                } else {
                    parent.join("::")
                };
                let list: Vec<&str> = group.iter().map(String::as_str).collect();
                found.push(format!("{name}: {}", list.join(" ⇄ ")));
            }
        }
    }
    found
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let edges = edges(&modules());
    assert!(
        edges.len() > 100,
        "the scan found too few imports: {}",
        edges.len()
    );
    let found = cycles(&edges);
    assert!(
        found.is_empty(),
        "import cycles between modules (break each by moving what both use down):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_domain_imports_nothing_of_the_daemon() {
    const DOMAIN: &[&str] = &[
        "approval", "policy", "trust", "workflow", "inbox", "subject", "budget",
    ];
    const DAEMON: &[&str] = &[
        "engine",
        "store",
        "chat",
        "api",
        "telegram",
        "slack",
        "platforms",
        "daemon",
        "client",
        "config",
    ];
    let wrong: Vec<String> = edges(&modules())
        .into_iter()
        .filter(|(a, b)| {
            a.first().is_some_and(|m| DOMAIN.contains(&m.as_str()))
                && b.first().is_some_and(|m| DAEMON.contains(&m.as_str()))
        })
        .map(|(a, b)| format!("{} uses {}", a.join("::"), b.join("::")))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_scan_sees_a_cycle_where_there_is_one() {
    let m = |s: &str| -> Module { s.split("::").map(str::to_string).collect() };
    let mut e = BTreeSet::new();
    e.insert((m("chat::inbound"), m("chat::conversation::approval")));
    e.insert((m("chat::conversation::task"), m("chat::inbound")));
    e.insert((m("engine::requests"), m("engine")));
    assert_eq!(cycles(&e), vec!["chat: conversation ⇄ inbound".to_string()]);
}
