//! A policy's frequency table and the relations that pick an entry of it for a requested
//! frequency (cpufreq's CPUFREQ_RELATION_L/H/C, `cpufreq_frequency_table_target` in
//! drivers/cpufreq/freq_table.c). Tables are ascending; the kernel also takes descending
//! ones, which no simulated driver builds.

/// How a requested frequency is matched to the table (cpufreq's CPUFREQ_RELATION_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// Lowest frequency at or above the target.
    L,
    /// Highest frequency at or below the target.
    H,
    /// Closest; ties go to the lower.
    C,
}

/// Pick a table entry for `target` with a cpufreq relation (the table is ascending). A target
/// beyond either end gets the nearest end.
pub fn table_lookup(table: &[u32], target: u32, relation: Relation) -> u32 {
    match relation {
        Relation::L => table.iter().copied().find(|&f| f >= target).unwrap_or(table[table.len() - 1]),
        Relation::H => table.iter().rev().copied().find(|&f| f <= target).unwrap_or(table[0]),
        Relation::C => {
            let hi = table.iter().copied().find(|&f| f >= target);
            let lo = table.iter().rev().copied().find(|&f| f <= target);
            match (lo, hi) {
                (Some(l), Some(h)) => {
                    if target - l <= h - target {
                        l
                    } else {
                        h
                    }
                }
                (Some(l), None) => l,
                (None, Some(h)) => h,
                (None, None) => table[0],
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relations_pick_as_cpufreq_does() {
        let t = [800_000, 1_200_000, 1_600_000, 2_000_000];
        assert_eq!(table_lookup(&t, 1_300_000, Relation::L), 1_600_000);
        assert_eq!(table_lookup(&t, 1_300_000, Relation::H), 1_200_000);
        assert_eq!(table_lookup(&t, 1_300_000, Relation::C), 1_200_000);
        assert_eq!(table_lookup(&t, 1_400_000, Relation::C), 1_200_000); // tie goes low
        assert_eq!(table_lookup(&t, 1_500_000, Relation::C), 1_600_000);
        assert_eq!(table_lookup(&t, 3_000_000, Relation::L), 2_000_000);
        assert_eq!(table_lookup(&t, 100_000, Relation::H), 800_000);
    }

    #[test]
    fn an_exact_entry_is_its_own_pick_under_every_relation() {
        let t = [800_000, 1_200_000, 1_600_000];
        for r in [Relation::L, Relation::H, Relation::C] {
            assert_eq!(table_lookup(&t, 1_200_000, r), 1_200_000, "{r:?}");
        }
    }
}
