//! Compiled scope patterns behind a literal prefilter (Aho-Corasick, then `RegexSet`s).

use regex::{RegexSet, RegexSetBuilder};

use super::{first_line, Rule, ScopeError};

/// One compiled pattern.
#[derive(Debug)]
pub(super) enum Engine {
    Regex(regex::Regex),
    /// Only for back-references (Nutch's loop breaker); a pattern that runs out of its
    /// backtracking budget counts as not matching.
    Fancy(fancy_regex::Regex),
}

impl Engine {
    fn is_match(&self, url: &str) -> bool {
        match self {
            Engine::Regex(r) => r.is_match(url),
            Engine::Fancy(f) => f.is_match(url).unwrap_or(false),
        }
    }
}

/// Patterns behind a literal prefilter. Most patterns need one of a few literals to match
/// (`example\.com/`, `sessionid=`, `.pdf`): one Aho-Corasick pass over the URL finds which
/// patterns could match, and only those run. Patterns with no usable literal (`.`,
/// `^https?://`) run on every URL, the plain ones in one `RegexSet`. On 1,000 Nutch-file rules
/// this measured 2.6× faster than one `RegexSet` (whose `matches` must run every pattern to the
/// end), and on a deny list about as fast as a `RegexSet` given a 256 MiB DFA cache, without
/// the cache (`cargo bench --bench scope`).
#[derive(Debug)]
pub(super) struct Patterns {
    engines: Vec<Engine>,
    /// The literals, ASCII case-insensitive (a superset of what the patterns need: safe).
    prefilter: Option<aho_corasick::AhoCorasick>,
    /// For each literal, the groups that need it (or another literal of their set).
    owners: Vec<Vec<u32>>,
    /// Patterns needing the same literal set, run together (one `RegexSet` pass when several).
    groups: Vec<Group>,
    /// The patterns run on every URL: plain ones in `always_set` (with their indexes)...
    always_set: Option<RegexSet>,
    always_index: Vec<usize>,
    /// ... and the back-referencing ones.
    always_fancy: Vec<usize>,
}

/// Patterns with the same literal set (`(?i)/a[^/]*\.js$`, `(?i)/ab[^/]*\.js$`, …).
#[derive(Debug)]
struct Group {
    /// Pattern indexes, ascending.
    members: Vec<usize>,
    /// All of them in one set, when there are several.
    set: Option<RegexSet>,
}

impl Patterns {
    /// Compile `rules` (each on its own first, so that an error names its line). Back-references
    /// are accepted only where `fancy` (scope files).
    pub(super) fn build(rules: &[Rule], fancy: bool) -> Result<Patterns, ScopeError> {
        let mut engines = Vec::with_capacity(rules.len());
        let mut lit = LiteralGroups::default();
        let (mut always, mut always_index, mut always_fancy) = (Vec::new(), Vec::new(), Vec::new());
        for (i, r) in rules.iter().enumerate() {
            let engine = compile_one(r)?;
            if let Engine::Fancy(_) = engine {
                if !fancy {
                    return Err(ScopeError::Pattern {
                        origin: r.origin.clone(),
                        pattern: r.pattern.clone(),
                        message: "back-references are for scope files only (Nutch's format)".into(),
                    });
                }
                always_fancy.push(i);
            } else {
                match regex_syntax::parse(&r.pattern)
                    .ok()
                    .and_then(|h| usable(need(&h)))
                {
                    Some(set) => lit.add(set, i),
                    None => {
                        always.push(r.pattern.as_str());
                        always_index.push(i);
                    }
                }
            }
            engines.push(engine);
        }
        let prefilter = prefilter(&lit.lits)?;
        let always_set = if always.is_empty() {
            None
        } else {
            Some(regex_set(&always, 1 << 26)?)
        };
        let groups = build_groups(rules, lit.members)?;
        Ok(Patterns {
            engines,
            prefilter,
            owners: lit.owners,
            groups,
            always_set,
            always_index,
            always_fancy,
        })
    }

    /// The groups the prefilter cannot rule out for `url`, each once.
    fn candidates(&self, url: &str, out: &mut Vec<u32>) {
        out.clear();
        if !url.is_ascii() {
            // The prefilter folds ASCII case only: a non-ASCII URL (never a canonical one) runs
            // every group.
            out.extend(0..self.groups.len() as u32);
            return;
        }
        if let Some(ac) = &self.prefilter {
            for m in ac.find_overlapping_iter(url) {
                out.extend_from_slice(&self.owners[m.pattern().as_usize()]);
            }
            out.sort_unstable();
            out.dedup();
        }
    }

    /// Some pattern matches `url`.
    pub(super) fn any_match(&self, url: &str) -> bool {
        if self.always_set.as_ref().is_some_and(|s| s.is_match(url))
            || self
                .always_fancy
                .iter()
                .any(|&i| self.engines[i].is_match(url))
        {
            return true;
        }
        CANDIDATES.with_borrow_mut(|c| {
            self.candidates(url, c);
            c.iter()
                .any(|&g| self.group_first(g as usize, url, true).is_some())
        })
    }

    /// The first member of group `g` that matches `url` (with `any`, just some member).
    fn group_first(&self, g: usize, url: &str, any: bool) -> Option<usize> {
        let g = &self.groups[g];
        match &g.set {
            None => self.engines[g.members[0]]
                .is_match(url)
                .then(|| g.members[0]),
            Some(set) if any => set.is_match(url).then(|| g.members[0]),
            Some(set) => set.matches(url).iter().next().map(|k| g.members[k]),
        }
    }

    /// The first pattern (in order) that matches `url`.
    pub(super) fn first_match(&self, url: &str) -> Option<usize> {
        let mut best = CANDIDATES.with_borrow_mut(|c| {
            self.candidates(url, c);
            c.iter()
                .filter_map(|&g| self.group_first(g as usize, url, false))
                .min()
        });
        if let Some(set) = &self.always_set {
            if best.is_none_or(|b| self.always_index[0] < b) {
                if let Some(k) = set.matches(url).iter().next() {
                    let i = self.always_index[k];
                    if best.is_none_or(|b| i < b) {
                        best = Some(i);
                    }
                }
            }
        }
        for &i in &self.always_fancy {
            if best.is_some_and(|b| b < i) {
                break;
            }
            if self.engines[i].is_match(url) {
                best = Some(i);
                break;
            }
        }
        best
    }
}

/// The literals of [`Patterns::build`] and the groups of patterns needing the same literal set.
#[derive(Default)]
struct LiteralGroups {
    lits: Vec<Vec<u8>>,
    /// For each literal, the groups that need it.
    owners: Vec<Vec<u32>>,
    lit_id: std::collections::HashMap<Vec<u8>, usize>,
    group_of: std::collections::HashMap<Vec<Vec<u8>>, usize>,
    /// Each group's pattern indexes.
    members: Vec<Vec<usize>>,
}

impl LiteralGroups {
    /// Add pattern `i` to the group of its literal set `set` (a new group registers its literals).
    fn add(&mut self, mut set: Vec<Vec<u8>>, i: usize) {
        let LiteralGroups {
            lits,
            owners,
            lit_id,
            group_of,
            members,
        } = self;
        set.sort();
        set.dedup();
        let g = *group_of.entry(set.clone()).or_insert_with(|| {
            members.push(Vec::new());
            for l in &set {
                let id = *lit_id.entry(l.clone()).or_insert_with(|| {
                    lits.push(l.clone());
                    owners.push(Vec::new());
                    lits.len() - 1
                });
                owners[id].push(members.len() as u32 - 1);
            }
            members.len() - 1
        });
        members[g].push(i);
    }
}

/// The Aho-Corasick prefilter over `lits` (ASCII case-insensitive); `None` without literals.
fn prefilter(lits: &[Vec<u8>]) -> Result<Option<aho_corasick::AhoCorasick>, ScopeError> {
    Ok(if lits.is_empty() {
        None
    } else {
        Some(
            aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                // A DFA: one table lookup per byte (a few MiB for a thousand rules).
                .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                .build(lits)
                .map_err(|e| ScopeError::Setting(format!("the patterns' literals: {e}")))?,
        )
    })
}

/// The groups of `members` (pattern indexes into `rules`), each of several run as one set.
fn build_groups(rules: &[Rule], members: Vec<Vec<usize>>) -> Result<Vec<Group>, ScopeError> {
    let mut groups = Vec::with_capacity(members.len());
    for m in members {
        let set = if m.len() > 1 {
            let pats: Vec<&str> = m.iter().map(|&i| rules[i].pattern.as_str()).collect();
            Some(regex_set(&pats, 1 << 24)?)
        } else {
            None
        };
        groups.push(Group { members: m, set });
    }
    Ok(groups)
}

thread_local! {
    static CANDIDATES: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What every match of a pattern must contain: one of these literals (ASCII-lowercased), or
/// nothing known (`None`).
pub(super) fn need(h: &regex_syntax::hir::Hir) -> Option<Vec<Vec<u8>>> {
    use regex_syntax::hir::HirKind;
    match h.kind() {
        HirKind::Literal(_) | HirKind::Class(_) => piece(h).map(|p| vec![p]),
        HirKind::Capture(c) => need(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => need(&r.sub),
        HirKind::Concat(children) => {
            // Runs of children that match finitely many strings (`\.`, `(js|css)`, `[Aa]`)
            // join into their cross product (`.js`, `.css`); the best run or child wins.
            let mut best: Option<Vec<Vec<u8>>> = None;
            let consider = |cand: Vec<Vec<u8>>, best: &mut Option<Vec<Vec<u8>>>| {
                if !cand.is_empty() && best.as_ref().is_none_or(|b| score(&cand) > score(b)) {
                    *best = Some(cand);
                }
            };
            let mut run: Vec<Vec<u8>> = vec![Vec::new()];
            for c in children {
                let e = exact(c);
                if let Some(joined) = e.as_ref().and_then(|e| cross(&run, e)) {
                    run = joined;
                    continue;
                }
                if run.iter().any(|r| !r.is_empty()) {
                    consider(std::mem::replace(&mut run, vec![Vec::new()]), &mut best);
                } else {
                    run = vec![Vec::new()];
                }
                match e {
                    // Too many to join: start a new run with it.
                    Some(e) => run = e,
                    None => {
                        if let Some(l) = need(c) {
                            consider(l, &mut best);
                        }
                    }
                }
            }
            if run.iter().any(|r| !r.is_empty()) {
                consider(run, &mut best);
            }
            best
        }
        HirKind::Alternation(children) => union(children, need),
        _ => None,
    }
}

/// What `f` gives each alternative, together (at most 64 strings; `None` if any gives `None`).
fn union(
    children: &[regex_syntax::hir::Hir],
    f: fn(&regex_syntax::hir::Hir) -> Option<Vec<Vec<u8>>>,
) -> Option<Vec<Vec<u8>>> {
    let mut all: Vec<Vec<u8>> = Vec::new();
    for c in children {
        all.extend(f(c)?);
        if all.len() > 64 {
            return None;
        }
    }
    all.sort();
    all.dedup();
    Some(all)
}

/// Every `a` followed by every `b`, unless that makes more than 64 strings.
fn cross(a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
    (a.len() * b.len() <= 64).then(|| {
        a.iter()
            .flat_map(|x| b.iter().map(move |y| [&x[..], &y[..]].concat()))
            .collect()
    })
}

/// The finitely many strings (ASCII-lowercased) `h` matches, if it matches only those:
/// literals, one-letter classes, and captures, alternations and concatenations of them (at most
/// 64 strings).
fn exact(h: &regex_syntax::hir::Hir) -> Option<Vec<Vec<u8>>> {
    use regex_syntax::hir::HirKind;
    match h.kind() {
        HirKind::Literal(_) | HirKind::Class(_) => piece(h).map(|p| vec![p]),
        HirKind::Capture(c) => exact(&c.sub),
        HirKind::Alternation(children) => union(children, exact),
        HirKind::Concat(children) => {
            let mut run: Vec<Vec<u8>> = vec![Vec::new()];
            for c in children {
                run = cross(&run, &exact(c)?)?;
            }
            Some(run)
        }
        _ => None,
    }
}

/// A set is as good as its shortest literal up to 8 bytes (rare enough in URLs), then the fewer
/// literals the better (a smaller automaton: `example.com/` beats `example.com/admin/`,
/// `example.com/login/`, …), then the longer.
fn score(set: &[Vec<u8>]) -> (usize, std::cmp::Reverse<usize>, usize) {
    let min = set.iter().map(Vec::len).min().unwrap_or(0);
    (min.min(8), std::cmp::Reverse(set.len()), min)
}

/// A set worth prefiltering on: every literal at least 3 bytes.
pub(super) fn usable(set: Option<Vec<Vec<u8>>>) -> Option<Vec<Vec<u8>>> {
    set.filter(|s| !s.is_empty() && s.iter().all(|l| l.len() >= 3))
}

/// The exact (ASCII-lowercased) bytes a literal or a one-letter class matches in an ASCII
/// haystack: `a`, `[Aa]` (what `(?i)` makes of a letter; its non-ASCII fold partners such as
/// `ſ` cannot occur in a canonical URL).
fn piece(h: &regex_syntax::hir::Hir) -> Option<Vec<u8>> {
    use regex_syntax::hir::{Class, HirKind};
    match h.kind() {
        HirKind::Literal(l) => Some(l.0.to_ascii_lowercase()),
        HirKind::Class(c) => {
            let mut ascii: Vec<u8> = Vec::new();
            let mut push = |lo: u32, hi: u32| -> bool {
                for v in lo..=hi.min(0x7f) {
                    ascii.push(v as u8);
                    if ascii.len() > 2 {
                        return false;
                    }
                }
                true
            };
            let ok = match c {
                Class::Unicode(u) => u.iter().all(|r| push(r.start() as u32, r.end() as u32)),
                Class::Bytes(b) => b.iter().all(|r| push(r.start() as u32, r.end() as u32)),
            };
            if !ok || ascii.is_empty() {
                return None;
            }
            let lower = ascii[0].to_ascii_lowercase();
            ascii
                .iter()
                .all(|b| b.to_ascii_lowercase() == lower)
                .then(|| vec![lower])
        }
        _ => None,
    }
}

/// Patterns already compiled one by one (so no error of theirs is new here) in one `RegexSet`
/// with a lazy-DFA cache of `dfa_bytes`.
fn regex_set(pats: &[&str], dfa_bytes: usize) -> Result<RegexSet, ScopeError> {
    RegexSetBuilder::new(pats)
        .size_limit(1 << 26)
        .dfa_size_limit(dfa_bytes)
        .build()
        .map_err(|e| {
            ScopeError::Setting(format!(
                "the patterns together: {}",
                first_line(&e.to_string())
            ))
        })
}

/// Compile one rule on its own, so that an error names its line (a set's error does not).
pub(super) fn compile_one(r: &Rule) -> Result<Engine, ScopeError> {
    match regex::RegexBuilder::new(&r.pattern)
        .size_limit(1 << 22)
        .build()
    {
        Ok(re) => Ok(Engine::Regex(re)),
        Err(e) => {
            // Java's back-references (Nutch's loop breaker) need a backtracking engine.
            if let Ok(f) = fancy_regex::RegexBuilder::new(&r.pattern)
                .backtrack_limit(100_000)
                .build()
            {
                return Ok(Engine::Fancy(f));
            }
            Err(ScopeError::Pattern {
                origin: r.origin.clone(),
                pattern: r.pattern.clone(),
                message: first_line(&e.to_string()),
            })
        }
    }
}
