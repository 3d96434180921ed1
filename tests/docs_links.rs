//! The documentation holds together: every relative link in README.md,
//! CHANGELOG.md and docs/*.md points to a file that exists, and a link with
//! a `#fragment` into a Markdown file names a heading that file has (by
//! GitHub's rules for heading anchors). README.md also stays short and free
//! of dated narrative: at most 260 lines, no ISO date, no issue reference.
//!
//! Every page of docs/ describes what is, not how it came to be: at most
//! 400 lines, and nowhere on it, code blocks included, a date (ISO, written
//! out like "29 Nov 2026" or "November 29, 2026", or numeric with slashes or
//! dots), an absolute path into a development machine (`/work/`, `/tmp/`,
//! `/home/`, `/root/`), a reference to one of the project's issues (`#28`,
//! `issue 28`) or the narrative of a work session ("helper session", "this
//! session", "this stop", "closing note", ...). The one exception: in
//! docs/performance.md, a row of a benchmark table may carry its run's date,
//! where a benchmark table is a Markdown table outside code blocks whose
//! header row has a cell reading `date` (any case), and a row is a line
//! starting with `|` that follows the table's separator line without a line
//! in between that does not start with `|`.
//!
//! Plain Rust, no shared data needed: `cargo test --release --test docs_links`.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

const README_MAX_LINES: usize = 260;

/// Most lines a page of docs/ may have.
const PAGE_MAX_LINES: usize = 400;

/// The page whose benchmark tables may carry dates.
const DATED_PAGE: &str = "performance.md";

/// Absolute paths that only exist on a development machine.
const MACHINE_PATHS: [&str; 4] = ["/work/", "/tmp/", "/home/", "/root/"];

/// Phrases that tell the story of a work session rather than what is
/// (compared in lower case).
const NARRATIVE: [&str; 7] = [
    "helper session",
    "this session",
    "another session",
    "same session",
    "this stop",
    "closing note",
    "previous session",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents whose links are checked.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut docs = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("readable docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    assert!(!pages.is_empty(), "docs/ has no Markdown page");
    docs.extend(pages);
    docs
}

/// The lines of a Markdown text outside fenced code blocks, with their
/// line numbers (1-based).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<(char, usize)> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        if let Some(c) = marker {
            let run = trimmed.chars().take_while(|x| *x == c).count();
            if run >= 3 {
                match fence {
                    None => fence = Some((c, run)),
                    Some((open, len)) if open == c && run >= len && trimmed[run..].trim().is_empty() => fence = None,
                    Some(_) => {}
                }
                continue;
            }
        }
        if fence.is_none() {
            out.push((i + 1, line));
        }
    }
    out
}

/// A line with its inline code spans removed (links inside them are text).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|c| *c == '`').count();
        let after = &rest[start + ticks..];
        let closing = "`".repeat(ticks);
        match after.find(&closing) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Link targets of one line: inline links and images `[text](target)` and
/// reference definitions `[label]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let trimmed = line.trim_start();
    if trimmed.starts_with('[')
        && let Some(close) = trimmed.find("]:")
        && !trimmed[1..close].contains(']')
    {
        if let Some(target) = trimmed[close + 2..].split_whitespace().next() {
            targets.push(target.trim_matches(|c| c == '<' || c == '>').to_owned());
        }
        return targets;
    }
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(pos) = line[i..].find("](") {
        let open = i + pos + 2;
        // The target runs to the matching parenthesis.
        let mut depth = 1;
        let mut end = open;
        while end < bytes.len() {
            match bytes[end] {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
        if end >= bytes.len() {
            break;
        }
        let inner = line[open..end].trim();
        let target = inner.split_whitespace().next().unwrap_or("");
        targets.push(target.trim_matches(|c| c == '<' || c == '>').to_owned());
        i = end + 1;
    }
    targets
}

/// Whether a target leaves the repository (a URL with a scheme, e.g.
/// `https:`, `mailto:`), so that no file can be checked.
fn is_external(target: &str) -> bool {
    match target.find(':') {
        Some(colon) => {
            let scheme = &target[..colon];
            !scheme.is_empty()
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !target[..colon].contains('/')
        }
        None => target.starts_with("//"),
    }
}

/// The anchor GitHub gives a heading: its rendered text in lower case,
/// everything but letters, digits, `-`, `_` and spaces dropped, each space
/// turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .flat_map(char::to_lowercase)
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The text a heading renders as: code spans keep their content, links
/// their text, emphasis markers go.
fn rendered(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // Links and images: keep the bracketed text only.
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](") else { break };
        let Some(close) = rest[open + mid..].find(')') else { break };
        text.push_str(rest[..open].trim_end_matches('!'));
        text.push_str(&rest[open + 1..open + mid]);
        rest = &rest[open + mid + close + 1..];
    }
    text.push_str(rest);
    text.replace(['`', '*'], "")
}

/// Every anchor of a Markdown text: its ATX headings' slugs, with GitHub's
/// `-1`, `-2`, ... for repeated ones.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let trimmed = line.trim_start();
        let level = trimmed.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&level) || line.len() - trimmed.len() > 3 {
            continue;
        }
        let after = &trimmed[level..];
        if !(after.is_empty() || after.starts_with(' ') || after.starts_with('\t')) {
            continue;
        }
        let title = after.trim().trim_end_matches('#').trim();
        let base = slug(&rendered(title));
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// Problems with the relative links of one document, each with its line.
fn broken_links(doc: &Path, text: &str) -> Vec<String> {
    let dir = doc.parent().expect("a document has a directory");
    let mut problems = Vec::new();
    for (n, line) in prose_lines(text) {
        for target in link_targets(line) {
            if target.is_empty() {
                problems.push(format!("{}:{n}: empty link target", doc.display()));
                continue;
            }
            if is_external(&target) {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            if path.is_empty() {
                if let Some(fragment) = fragment
                    && !anchors(text).contains(fragment)
                {
                    problems.push(format!("{}:{n}: {target}: no heading with anchor #{fragment} here", doc.display()));
                }
                continue;
            }
            let file = dir.join(path.replace("%20", " "));
            if !file.exists() {
                problems.push(format!("{}:{n}: {target}: no such file {}", doc.display(), file.display()));
                continue;
            }
            let Some(fragment) = fragment else { continue };
            if file.extension().is_none_or(|e| e != "md") {
                problems.push(format!("{}:{n}: {target}: a fragment into a file that is not Markdown", doc.display()));
                continue;
            }
            let other = std::fs::read_to_string(&file).expect("readable Markdown file");
            if !anchors(&other).contains(fragment) {
                problems.push(format!(
                    "{}:{n}: {target}: {} has no heading with anchor #{fragment}",
                    doc.display(),
                    file.display()
                ));
            }
        }
    }
    problems
}

/// ISO dates (`2024-01-31`) in a text.
fn iso_dates(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let digit = |i: usize| i < b.len() && b[i].is_ascii_digit();
    let mut out = Vec::new();
    for i in 0..b.len() {
        let starts = i == 0 || !b[i - 1].is_ascii_digit();
        if starts
            && (0..4).all(|k| digit(i + k))
            && b.get(i + 4) == Some(&b'-')
            && digit(i + 5)
            && digit(i + 6)
            && b.get(i + 7) == Some(&b'-')
            && digit(i + 8)
            && digit(i + 9)
            && !digit(i + 10)
        {
            out.push(text[i..i + 10].to_owned());
        }
    }
    out
}

/// References to issues: `#12` (a `#` not inside a word or a link
/// fragment, then digits) and `issue 12`, `issues 12`, `issue #12`.
fn issue_references(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    for (i, _) in text.match_indices('#') {
        // Not inside a word, a heading marker, a path, or a link's `](#...`.
        let before_ok = i == 0
            || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'#' || b[i - 1] == b'/' || text[..i].ends_with("]("));
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if before_ok && digits > 0 {
            out.push(text[i..i + 1 + digits].to_owned());
        }
    }
    let lower = text.to_ascii_lowercase();
    for (i, _) in lower.match_indices("issue") {
        if i > 0 && lower.as_bytes()[i - 1].is_ascii_alphabetic() {
            continue;
        }
        let rest = lower[i + 5..].strip_prefix('s').unwrap_or(&lower[i + 5..]);
        let rest = rest.trim_start_matches([' ', '\u{a0}']);
        let rest = rest.strip_prefix('#').unwrap_or(rest);
        if rest.starts_with(|c: char| c.is_ascii_digit()) {
            let end = lower.len() - rest.len() + rest.chars().take_while(char::is_ascii_digit).count();
            out.push(text[i..end].to_owned());
        }
    }
    out
}

/// Month names as dates write them: in full or abbreviated to three
/// letters (with or without a full stop), capitalised.
fn is_month(word: &str) -> bool {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let word = word.strip_suffix('.').unwrap_or(word);
    MONTHS
        .iter()
        .any(|m| word == *m || (word.len() == 3 && m.starts_with(word)) || (word == "Sept" && *m == "September"))
}

/// A year as a date has it: four digits, 1900 to 2099.
fn is_year(word: &str) -> bool {
    word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()) && (word.starts_with("19") || word.starts_with("20"))
}

/// A day of the month, possibly with its ordinal suffix (`29`, `29th`).
fn is_day(word: &str) -> bool {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    (1..=2).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (1..=31).contains(&digits.parse::<u32>().unwrap_or(0))
        && ["", "st", "nd", "rd", "th"].contains(&suffix)
}

/// Dates written other than as ISO dates: a month's name followed by a year
/// (`Nov 2026`, which `29 Nov 2026` contains) or by a day and a year
/// (`November 29, 2026`), and numeric dates with slashes or dots whose
/// first or last part is a year (`2026/11/29`, `29.11.2026`).
fn written_dates(text: &str) -> Vec<String> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || "|()[]*_`\"'<>;".contains(c))
        .map(|w| w.trim_end_matches([',', ':', ';', '.']))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if is_month(w) {
            if let Some(y) = words.get(i + 1).filter(|y| is_year(y)) {
                out.push(format!("{w} {y}"));
            } else if let (Some(d), Some(y)) = (words.get(i + 1), words.get(i + 2))
                && is_day(d)
                && is_year(y)
            {
                out.push(format!("{w} {d} {y}"));
            }
        }
        for sep in ['/', '.'] {
            let parts: Vec<&str> = w.trim_end_matches('.').split(sep).collect();
            let numeric = parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            let short = |p: &&str| (1..=2).contains(&p.len());
            if parts.len() == 3
                && numeric
                && ((is_year(parts[0]) && parts[1..].iter().all(short))
                    || (is_year(parts[2]) && parts[..2].iter().all(short)))
            {
                out.push((*w).to_owned());
            }
        }
    }
    out
}

/// The line numbers (1-based) of the rows of the tables whose header row
/// has a `date` column, code blocks left out.
fn dated_table_rows(text: &str) -> BTreeSet<usize> {
    let prose: BTreeMap<usize, &str> = prose_lines(text).into_iter().collect();
    let is_row = |n: usize| prose.get(&n).is_some_and(|l| l.trim_start().starts_with('|'));
    let is_separator = |n: usize| {
        prose.get(&n).is_some_and(|l| {
            let l = l.trim();
            l.starts_with('|') && l.contains('-') && l.chars().all(|c| "|-: ".contains(c))
        })
    };
    let mut rows = BTreeSet::new();
    for (&n, line) in &prose {
        if !is_row(n) || !is_separator(n + 1) || (n > 1 && is_row(n - 1)) {
            continue;
        }
        let dated = line.split('|').any(|cell| cell.trim().eq_ignore_ascii_case("date"));
        if dated {
            rows.extend((n + 2..).take_while(|&r| is_row(r)));
        }
    }
    rows
}

/// What keeps a page of docs/ (named `name`, holding `text`) from being
/// reference documentation, each with its line.
fn page_problems(name: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let lines = text.lines().count();
    if lines > PAGE_MAX_LINES {
        problems.push(format!("{name}: {lines} lines, more than {PAGE_MAX_LINES}"));
    }
    let dated_rows = if name == DATED_PAGE { dated_table_rows(text) } else { BTreeSet::new() };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if !dated_rows.contains(&n) {
            let dates: Vec<String> = iso_dates(line).into_iter().chain(written_dates(line)).collect();
            if !dates.is_empty() {
                problems.push(format!("{name}:{n}: a date outside a benchmark table: {dates:?}"));
            }
        }
        for path in MACHINE_PATHS.iter().filter(|p| line.contains(*p)) {
            problems.push(format!("{name}:{n}: a development machine's path {path}"));
        }
        let issues = issue_references(line);
        if !issues.is_empty() {
            problems.push(format!("{name}:{n}: refers to issues: {issues:?}"));
        }
        let lower = line.to_lowercase();
        for phrase in NARRATIVE.iter().filter(|p| lower.contains(*p)) {
            problems.push(format!("{name}:{n}: session narrative: {phrase:?}"));
        }
    }
    problems
}

#[test]
fn docs_pages_describe_what_is() {
    let mut problems = Vec::new();
    let mut pages = 0;
    for doc in documents().iter().filter(|d| d.parent().is_some_and(|p| p.ends_with("docs"))) {
        let text = std::fs::read_to_string(doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        let name = doc.file_name().expect("a page has a name").to_string_lossy();
        problems.extend(page_problems(&name, &text));
        pages += 1;
    }
    println!(
        "docs_links: {pages} pages of docs/ checked for dates, paths, issues and narrative, {} problems",
        problems.len()
    );
    assert!(pages > 0, "no page of docs/ checked");
    assert!(problems.is_empty(), "docs/ pages that narrate instead of describe:\n{}", problems.join("\n"));
}

#[test]
fn relative_links_resolve() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        checked += prose_lines(&text).iter().map(|(_, l)| link_targets(l).len()).sum::<usize>();
        problems.extend(broken_links(&doc, &text));
    }
    println!("docs_links: {checked} links in {} documents, {} broken", documents().len(), problems.len());
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

#[test]
fn readme_is_short_and_undated() {
    let text = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = text.lines().count();
    let mut problems = Vec::new();
    if lines > README_MAX_LINES {
        problems.push(format!("README.md has {lines} lines, more than {README_MAX_LINES}"));
    }
    let dates = iso_dates(&text);
    if !dates.is_empty() {
        problems.push(format!("README.md has dates: {dates:?}"));
    }
    let issues = issue_references(&text);
    if !issues.is_empty() {
        problems.push(format!("README.md refers to issues: {issues:?}"));
    }
    println!("docs_links: README.md has {lines} lines");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// The checks themselves must be able to fail.

#[test]
fn a_broken_link_is_reported() {
    let dir = std::env::temp_dir().join(format!("tbserver-docs-links-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    std::fs::write(dir.join("docs/page.md"), "# A page\n\n## The search's `score`\n\n## Twice\n\n## Twice\n").unwrap();
    let doc = dir.join("README.md");
    let text = "\
[ok](docs/page.md) [ok](docs/page.md#a-page) [ok](docs/page.md#the-searchs-score)
[ok](docs/page.md#twice-1) [ok](https://example.org/x#y) [ok](#local)
`[in code](missing.md)`

```text
[in a fence](missing.md)
```

# Local
[bad](docs/missing.md)
[bad anchor](docs/page.md#no-such-heading)
[bad](docs/page.md#twice-2) [bad](#nowhere)
[ref]: docs/also-missing.md
";
    let problems = broken_links(&doc, text);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(problems.len(), 5, "{problems:#?}");
    assert!(problems[0].contains("docs/missing.md"), "{problems:#?}");
    assert!(problems[1].contains("#no-such-heading"), "{problems:#?}");
    assert!(problems[2].contains("#twice-2"), "{problems:#?}");
    assert!(problems[3].contains("#nowhere"), "{problems:#?}");
    assert!(problems[4].contains("also-missing.md"), "{problems:#?}");
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug(&rendered("DTZ50'': distance to the next zeroing move")),
        "dtz50-distance-to-the-next-zeroing-move"
    );
    assert_eq!(slug(&rendered("`GET /api/v1/probe`")), "get-apiv1probe");
    assert_eq!(slug(&rendered("POST and GET `/api/v1/tables/generate`")), "post-and-get-apiv1tablesgenerate");
    assert_eq!(slug(&rendered("Sources of truth — [chesstb](https://x)")), "sources-of-truth--chesstb");
    assert_eq!(slug(&rendered("Keep_this snake_case")), "keep_this-snake_case");
}

#[test]
fn dates_and_issue_numbers_are_found() {
    assert_eq!(iso_dates("run on 2026-11-25, and 12026-11-255 is no date"), ["2026-11-25"]);
    assert!(iso_dates("1,234-56-78 v1.2.3").is_empty());
    assert_eq!(
        issue_references("see #14 (#15) and issue 7, Issues #8; not a#1, [x](#12-y) or page.md#3"),
        ["#14", "#15", "#8", "issue 7", "Issues #8"]
    );
    assert!(issue_references("the issue is 2 plies; #anchor; tissue 4; ## 5 heading").is_empty());
}

#[test]
fn written_dates_are_found() {
    assert_eq!(
        written_dates("run on 29 Nov 2026, and on November 29, 2026 (Sept. 3rd 2025)"),
        ["Nov 2026", "November 29 2026", "Sept 3rd 2025"]
    );
    assert_eq!(written_dates("2026/11/29 and 29.11.2026, 1/12/2026"), ["2026/11/29", "29.11.2026", "1/12/2026"]);
    assert!(
        written_dates("it may 2048 ways; share 1/3; v1.2.3; 127.0.0.1; 4 Mar 12; March 12 moves; 0.25 of 2026")
            .is_empty()
    );
}

#[test]
fn a_narrating_page_is_reported() {
    let page = "\
# Benchmarks

| case | time | date |
| --- | ---: | --- |
| warm | 1 µs | 2026-11-29 |

| case | time |
| --- | ---: |
| cold | 2 µs, 2026-11-28 |

Measured on 27 Nov 2026 by a helper session, see issue #28.

```sh
cd /work/main && cargo bench   # this stop
```
";
    let problems = page_problems(DATED_PAGE, page);
    let expected = [
        ":9: a date outside",
        ":11: a date outside",
        ":11: refers to issues",
        ":11: session narrative: \"helper session\"",
        ":14: a development machine's path /work/",
        ":14: session narrative: \"this stop\"",
    ];
    assert_eq!(problems.len(), expected.len(), "{problems:#?}");
    for (p, e) in problems.iter().zip(expected) {
        assert!(p.contains(e), "{p} should contain {e}; all: {problems:#?}");
    }
    // Elsewhere than performance.md, a dated table's rows are dates too.
    let elsewhere = page_problems("other.md", page);
    assert!(elsewhere.iter().any(|p| p.contains(":5: a date outside")), "{elsewhere:#?}");
    // A page over the limit.
    let long = "line\n".repeat(PAGE_MAX_LINES + 1);
    assert!(page_problems("long.md", &long).iter().any(|p| p.contains("more than 400")));
    assert!(page_problems("short.md", &"line\n".repeat(PAGE_MAX_LINES)).is_empty());
}
