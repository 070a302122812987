//! Budgets (credit gating), pure: what `[budgets]` limits, the day and month a moment
//! falls in (in the budget's time zone), the check a declared cost must pass, the
//! warnings a share of a budget gives, and the words for all of them.
//!
//! 1. Spend is counted per agent and for everyone together, per day and per month:
//!    what allowed and approved requests declared (a result's reported cost takes the
//!    place of what its request declared) and what inbox tasks reported. The store sums
//!    it for the periods [`Budgets::periods`] gives ([`Spend`]).
//! 2. A declared cost must fit what is left of every budget that applies to its agent
//!    ([`Budgets::check`]); the first that it does not fit is the [`Overdraft`] whose
//!    words are the refusal's reason.
//! 3. A budget whose spend reaches `warn_at` of its limit gives a [`Warning`], once per
//!    budget and period (the store keeps which were given).

use std::collections::BTreeMap;
use std::fmt;

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// The largest cost a request, a result or a budget may name (in the budget's currency).
pub const MAX_COST: f64 = 1_000_000_000.0;

/// Whether `cost` is a cost a request or a result may declare: finite, from 0 to
/// [`MAX_COST`].
#[must_use]
pub fn valid_cost(cost: f64) -> bool {
    cost.is_finite() && (0.0..=MAX_COST).contains(&cost)
}

/// `[budgets]`, resolved.
#[derive(Debug, Clone)]
pub struct Budgets {
    /// The name shown beside every figure ("USD").
    pub currency: String,
    /// Everyone's limits together.
    pub daily: Option<f64>,
    pub monthly: Option<f64>,
    /// The share of a budget at which owners are told (0 < warn_at ≤ 1).
    pub warn_at: f64,
    /// Days and months are counted in it.
    pub timezone: TimeZone,
    /// Its IANA name, as written.
    pub timezone_name: String,
    /// `[budgets.agents.NAME]`.
    pub agents: BTreeMap<String, Limits>,
}

/// A daily and a monthly limit; `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    pub daily: Option<f64>,
    pub monthly: Option<f64>,
}

/// A day or a month.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Day,
    Month,
}

impl Span {
    /// "daily", "monthly".
    #[must_use]
    pub fn adjective(self) -> &'static str {
        match self {
            Span::Day => "daily",
            Span::Month => "monthly",
        }
    }

    /// "today", "this month".
    #[must_use]
    pub fn now_words(self) -> &'static str {
        match self {
            Span::Day => "today",
            Span::Month => "this month",
        }
    }
}

/// Whose budget: one agent's, or everyone's together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whose {
    Agent(String),
    Everyone,
}

impl fmt::Display for Whose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Whose::Agent(a) => write!(f, "{a}'s"),
            Whose::Everyone => write!(f, "everyone's"),
        }
    }
}

/// The day and the month a moment falls in: `[start, end)` in ms since the epoch, and
/// each one's name ("2026-11-26", "2026-11"), which keys the warnings given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Periods {
    pub day: (i64, i64),
    pub month: (i64, i64),
    pub day_key: String,
    pub month_key: String,
}

impl Periods {
    /// The bounds of `span`.
    #[must_use]
    pub fn of(&self, span: Span) -> (i64, i64) {
        match span {
            Span::Day => self.day,
            Span::Month => self.month,
        }
    }

    /// The name of `span`'s period.
    #[must_use]
    pub fn key(&self, span: Span) -> &str {
        match span {
            Span::Day => &self.day_key,
            Span::Month => &self.month_key,
        }
    }
}

/// What was spent in the periods of [`Periods`]: by the agent, and by everyone.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    pub agent_day: f64,
    pub agent_month: f64,
    pub all_day: f64,
    pub all_month: f64,
}

impl Spend {
    fn of(&self, whose: &Whose, span: Span) -> f64 {
        match (whose, span) {
            (Whose::Agent(_), Span::Day) => self.agent_day,
            (Whose::Agent(_), Span::Month) => self.agent_month,
            (Whose::Everyone, Span::Day) => self.all_day,
            (Whose::Everyone, Span::Month) => self.all_month,
        }
    }
}

/// One budget and what was spent of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub whose: Whose,
    pub span: Span,
    pub limit: f64,
    pub spent: f64,
}

impl Standing {
    /// What is left (never below 0).
    #[must_use]
    pub fn left(&self) -> f64 {
        (self.limit - self.spent).max(0.0)
    }

    /// The key of its warning row: `everyone:day`, `agent:mailer:month`.
    #[must_use]
    pub fn key(&self) -> String {
        let span = match self.span {
            Span::Day => "day",
            Span::Month => "month",
        };
        match &self.whose {
            Whose::Agent(a) => format!("agent:{a}:{span}"),
            Whose::Everyone => format!("everyone:{span}"),
        }
    }
}

/// A declared cost that does not fit a budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Overdraft {
    pub cost: f64,
    pub budget: Standing,
    pub currency: String,
}

impl fmt::Display for Overdraft {
    /// "it would cost 2.00 USD, and mailer's daily budget has 1.20 USD left (3.80 USD of
    /// 5.00 USD spent today)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.budget;
        let c = &self.currency;
        write!(
            f,
            "it would cost {}, and {} {} budget has {} left ({} of {} spent {})",
            money(self.cost, c),
            b.whose,
            b.span.adjective(),
            money(b.left(), c),
            money(b.spent, c),
            money(b.limit, c),
            b.span.now_words()
        )
    }
}

/// A budget that reached its warning share.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub budget: Standing,
    /// The period's name ("2026-11-26"), which keeps the warning to once per period.
    pub period: String,
    pub warn_at: f64,
    pub currency: String,
}

impl fmt::Display for Warning {
    /// "Budget warning: mailer's daily budget is 82 % spent: 4.10 USD of 5.00 USD today,
    /// 0.90 USD left."
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.budget;
        let c = &self.currency;
        let share = if b.limit > 0.0 {
            (b.spent / b.limit * 100.0).floor()
        } else {
            100.0
        };
        write!(
            f,
            "Budget warning: {} {} budget is {share:.0} % spent: {} of {} {}, {} left.",
            b.whose,
            b.span.adjective(),
            money(b.spent, c),
            money(b.limit, c),
            b.span.now_words(),
            money(b.left(), c)
        )
    }
}

/// "12.50 USD".
#[must_use]
pub fn money(amount: f64, currency: &str) -> String {
    format!("{amount:.2} {currency}")
}

/// A little under a cent's thousandth: sums of costs in floating point may land a hair
/// above a limit they exactly reach.
const EPSILON: f64 = 1e-9;

impl Budgets {
    /// The agent's own limits, if `[budgets.agents]` names it.
    #[must_use]
    pub fn of_agent(&self, agent: &str) -> Limits {
        self.agents.get(agent).copied().unwrap_or_default()
    }

    /// Whether any budget applies to `agent`'s spend.
    #[must_use]
    pub fn apply_to(&self, agent: &str) -> bool {
        let own = self.of_agent(agent);
        self.daily.is_some()
            || self.monthly.is_some()
            || own.daily.is_some()
            || own.monthly.is_some()
    }

    /// The name of the day `at` (ms since the epoch) falls in, in the budget's time
    /// zone: "2026-11-26".
    #[must_use]
    pub fn day_key(&self, at: i64) -> String {
        Timestamp::from_millisecond(at)
            .unwrap_or(Timestamp::UNIX_EPOCH)
            .to_zoned(self.timezone.clone())
            .strftime("%Y-%m-%d")
            .to_string()
    }

    /// The day and the month `now` (ms since the epoch) falls in, in the budget's time
    /// zone.
    #[must_use]
    pub fn periods(&self, now: i64) -> Periods {
        let at = Timestamp::from_millisecond(now)
            .unwrap_or(Timestamp::UNIX_EPOCH)
            .to_zoned(self.timezone.clone());
        let ms = |z: Option<jiff::Zoned>| z.map_or(i64::MAX, |z| z.timestamp().as_millisecond());
        let day_start = at.start_of_day().ok();
        let day_end = day_start.as_ref().and_then(|d| d.checked_add(1.day()).ok());
        let month_start = at.first_of_month().ok().and_then(|m| m.start_of_day().ok());
        let month_end = month_start
            .as_ref()
            .and_then(|m| m.checked_add(1.month()).ok());
        Periods {
            day: (day_start.clone().map_or(0, |z| ms(Some(z))), ms(day_end)),
            month: (month_start.map_or(0, |z| ms(Some(z))), ms(month_end)),
            day_key: at.strftime("%Y-%m-%d").to_string(),
            month_key: at.strftime("%Y-%m").to_string(),
        }
    }

    /// Every budget that applies to `agent`, with what was spent of it: the agent's
    /// day and month, then everyone's.
    #[must_use]
    pub fn standing(&self, agent: &str, spend: &Spend) -> Vec<Standing> {
        let own = self.of_agent(agent);
        let me = Whose::Agent(agent.to_string());
        [
            (me.clone(), Span::Day, own.daily),
            (me, Span::Month, own.monthly),
            (Whose::Everyone, Span::Day, self.daily),
            (Whose::Everyone, Span::Month, self.monthly),
        ]
        .into_iter()
        .filter_map(|(whose, span, limit)| {
            let spent = spend.of(&whose, span);
            limit.map(|limit| Standing {
                whose,
                span,
                limit,
                spent,
            })
        })
        .collect()
    }

    /// Whether `cost` fits what is left of every budget of `agent`'s; the first it does
    /// not fit otherwise.
    pub fn check(&self, agent: &str, spend: &Spend, cost: f64) -> Result<(), Overdraft> {
        match self
            .standing(agent, spend)
            .into_iter()
            .find(|b| cost > b.limit - b.spent + EPSILON)
        {
            Some(budget) => Err(Overdraft {
                cost,
                budget,
                currency: self.currency.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The budgets of `agent`'s at or past their warning share (whether each was given
    /// already is the store's to know).
    #[must_use]
    pub fn warnings(&self, agent: &str, spend: &Spend, periods: &Periods) -> Vec<Warning> {
        self.standing(agent, spend)
            .into_iter()
            .filter(|b| b.spent > 0.0 && b.spent + EPSILON >= b.limit * self.warn_at)
            .map(|budget| Warning {
                period: periods.key(budget.span).to_string(),
                budget,
                warn_at: self.warn_at,
                currency: self.currency.clone(),
            })
            .collect()
    }

    /// "3.20 USD of 5.00 USD today" for each budget of `agent`'s, the agent's own first.
    #[must_use]
    pub fn describe(&self, agent: &str, spend: &Spend) -> Vec<String> {
        self.standing(agent, spend)
            .into_iter()
            .map(|b| {
                let whose = match b.whose {
                    Whose::Agent(_) => String::new(),
                    Whose::Everyone => " (everyone together)".to_string(),
                };
                format!(
                    "{} of {} {}{whose}",
                    money(b.spent, &self.currency),
                    money(b.limit, &self.currency),
                    b.span.now_words()
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budgets(tz: &str) -> Budgets {
        Budgets {
            currency: "USD".into(),
            daily: Some(50.0),
            monthly: Some(500.0),
            warn_at: 0.8,
            timezone: TimeZone::get(tz).unwrap(),
            timezone_name: tz.into(),
            agents: BTreeMap::from([(
                "mailer".to_string(),
                Limits {
                    daily: Some(5.0),
                    monthly: Some(40.0),
                },
            )]),
        }
    }

    fn ms(s: &str) -> i64 {
        s.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn days_and_months_are_counted_in_the_budgets_time_zone() {
        // 23:30 UTC on 30 November is already 1 December in Berlin.
        let at = ms("2026-11-30T23:30:00Z");
        let utc = budgets("UTC").periods(at);
        assert_eq!(utc.day_key, "2026-11-30");
        assert_eq!(utc.month_key, "2026-11");
        assert_eq!(
            utc.day,
            (ms("2026-11-30T00:00:00Z"), ms("2026-12-01T00:00:00Z"))
        );
        assert_eq!(
            utc.month,
            (ms("2026-11-01T00:00:00Z"), ms("2026-12-01T00:00:00Z"))
        );
        let berlin = budgets("Europe/Berlin").periods(at);
        assert_eq!(berlin.day_key, "2026-12-01");
        assert_eq!(berlin.month_key, "2026-12");
        assert_eq!(berlin.day.0, ms("2026-11-30T23:00:00Z"));
        assert_eq!(
            berlin.month,
            (ms("2026-11-30T23:00:00Z"), ms("2026-12-31T23:00:00Z"))
        );
    }

    #[test]
    fn a_day_of_a_clock_change_is_as_long_as_it_is() {
        // Berlin's clocks go back on 25 October 2026: that day has 25 hours.
        let p = budgets("Europe/Berlin").periods(ms("2026-10-25T12:00:00Z"));
        assert_eq!(p.day.1 - p.day.0, 25 * 3_600_000);
    }

    #[test]
    fn a_cost_must_fit_every_budget_that_applies() {
        let b = budgets("UTC");
        let spend = Spend {
            agent_day: 3.8,
            agent_month: 10.0,
            all_day: 10.0,
            all_month: 100.0,
        };
        assert!(
            b.check("mailer", &spend, 1.2).is_ok(),
            "exactly what is left fits"
        );
        let over = b.check("mailer", &spend, 2.0).unwrap_err();
        assert_eq!(
            over.to_string(),
            "it would cost 2.00 USD, and mailer's daily budget has 1.20 USD left (3.80 USD of \
             5.00 USD spent today)"
        );
        // An agent without its own budget meets only everyone's.
        assert!(b.check("other", &spend, 40.0).is_ok());
        let over = b.check("other", &spend, 40.5).unwrap_err();
        assert!(
            over.to_string()
                .contains("everyone's daily budget has 40.00 USD left"),
            "{over}"
        );
    }

    #[test]
    fn warnings_come_at_the_share_and_say_the_figures() {
        let b = budgets("UTC");
        let p = b.periods(ms("2026-11-26T10:00:00Z"));
        let mut spend = Spend {
            agent_day: 3.9,
            ..Spend::default()
        };
        assert!(b.warnings("mailer", &spend, &p).is_empty());
        spend.agent_day = 4.0;
        let w = b.warnings("mailer", &spend, &p);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].period, "2026-11-26");
        assert_eq!(w[0].budget.key(), "agent:mailer:day");
        assert_eq!(
            w[0].to_string(),
            "Budget warning: mailer's daily budget is 80 % spent: 4.00 USD of 5.00 USD today, 1.00 USD left."
        );
    }

    #[test]
    fn costs_are_finite_and_bounded() {
        assert!(valid_cost(0.0) && valid_cost(12.5) && valid_cost(MAX_COST));
        for bad in [-0.01, f64::NAN, f64::INFINITY, MAX_COST * 2.0] {
            assert!(!valid_cost(bad), "{bad}");
        }
    }
}
