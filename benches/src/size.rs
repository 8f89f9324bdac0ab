//! Benchmark sizes: `h*w*iterations`-style products of positive integers, and the named sizes
//! every benchmark defines (`default`, `paper`, `quick`, `tiny`).

use std::fmt;
use std::str::FromStr;

/// The dimensions of one benchmark run, e.g. `[2000, 2000, 100]` for `2000*2000*100`. What each
/// number means is the benchmark's business (see [`crate::benchmarks::BenchDef::dims`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Size(pub Vec<usize>);

impl Size {
    /// The numbers.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// How many numbers the size has.
    pub fn arity(&self) -> usize {
        self.0.len()
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(usize::to_string).collect();
        f.write_str(&parts.join("*"))
    }
}

/// Parses one number of a size: digits with optional `_` separators, optionally followed by a
/// `K` (10^3), `M` (10^6) or `G` (10^9) suffix.
fn parse_number(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let (digits, scale) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
        Some('g' | 'G') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t, 1),
    };
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() || !clean.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("`{text}` is not a positive integer"));
    }
    let n: usize = clean.parse().map_err(|_| format!("`{text}` is too large"))?;
    let n = n.checked_mul(scale).ok_or_else(|| format!("`{text}` is too large"))?;
    if n == 0 {
        return Err(format!("`{text}`: sizes must be positive"));
    }
    Ok(n)
}

impl FromStr for Size {
    type Err = String;

    /// Parses `2000*2000*100` (also `2000x2000x100`, `10M*10`, `4_000*1K*32*5`).
    fn from_str(text: &str) -> Result<Size, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty size".into());
        }
        let dims = text.split(['*', 'x', 'X']).map(parse_number).collect::<Result<Vec<_>, _>>();
        dims.map(Size).map_err(|e| format!("size `{text}`: {e}"))
    }
}

/// The sizes every benchmark names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SizeName {
    /// The suite's default (BENCHMARKS.md's "default size").
    Default,
    /// The seed's size (thesis chapter 8.5), where it gives one; else the default.
    Paper,
    /// Small sizes for `--quick`: seconds for the whole suite.
    Quick,
    /// Tiny sizes for tests: milliseconds, even on the interpreter.
    Tiny,
}

impl SizeName {
    /// Every name, in the order `--help` lists them.
    pub const ALL: [SizeName; 4] = [SizeName::Default, SizeName::Paper, SizeName::Quick, SizeName::Tiny];

    /// The name as written on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            SizeName::Default => "default",
            SizeName::Paper => "paper",
            SizeName::Quick => "quick",
            SizeName::Tiny => "tiny",
        }
    }
}

/// What `--size` asks for: a named size of each benchmark, or explicit sizes (several separated
/// by commas) given to every chosen benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeChoice {
    /// Each benchmark's size of this name.
    Named(SizeName),
    /// These sizes, for every chosen benchmark (whose arity must match).
    Explicit(Vec<Size>),
}

impl FromStr for SizeChoice {
    type Err = String;

    /// `default`, `paper`, `quick`, `tiny`, or sizes like `2000*2000*100,500*500*10`.
    fn from_str(text: &str) -> Result<SizeChoice, String> {
        let t = text.trim();
        if let Some(name) = SizeName::ALL.iter().find(|n| n.as_str().eq_ignore_ascii_case(t)) {
            return Ok(SizeChoice::Named(*name));
        }
        let sizes = t.split(',').map(str::parse).collect::<Result<Vec<Size>, _>>()?;
        Ok(SizeChoice::Explicit(sizes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_parse_with_any_separator_and_suffix() {
        assert_eq!("2000*2000*100".parse::<Size>().unwrap(), Size(vec![2000, 2000, 100]));
        assert_eq!("2000x2000x100".parse::<Size>().unwrap(), Size(vec![2000, 2000, 100]));
        assert_eq!(" 10M*10 ".parse::<Size>().unwrap(), Size(vec![10_000_000, 10]));
        assert_eq!("4_000*1K*32*5".parse::<Size>().unwrap(), Size(vec![4000, 1000, 32, 5]));
        assert_eq!("7".parse::<Size>().unwrap(), Size(vec![7]));
    }

    #[test]
    fn bad_sizes_are_rejected_with_the_culprit() {
        for bad in ["", "2000**100", "2000*0*1", "a*b", "-3*4", "1.5*2", "99999999999999999999G"] {
            let e = bad.parse::<Size>().unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
        assert!("12*0".parse::<Size>().unwrap_err().contains("positive"));
        assert!("12*zz".parse::<Size>().unwrap_err().contains("`zz`"));
    }

    #[test]
    fn sizes_print_as_they_parse() {
        let s: Size = "2000*2000*100".parse().unwrap();
        assert_eq!(s.to_string(), "2000*2000*100");
        assert_eq!(s.to_string().parse::<Size>().unwrap(), s);
        assert_eq!(s.arity(), 3);
    }

    #[test]
    fn choices_are_names_or_lists() {
        assert_eq!("paper".parse::<SizeChoice>().unwrap(), SizeChoice::Named(SizeName::Paper));
        assert_eq!("TINY".parse::<SizeChoice>().unwrap(), SizeChoice::Named(SizeName::Tiny));
        assert_eq!(
            "1*2,3*4".parse::<SizeChoice>().unwrap(),
            SizeChoice::Explicit(vec![Size(vec![1, 2]), Size(vec![3, 4])])
        );
        assert!("huge".parse::<SizeChoice>().is_err());
    }
}
