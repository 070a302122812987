//! Second factors and step-up (docs/teams.md): a person enrolls TOTP factors (a first
//! code finishes the enrolment), removes one after a fresh code, and confirms approvals
//! that need a factor with a code, which opens a window on that surface (`cli`, or a
//! dashboard session) in which more need none; each use renews it.

use super::{Engine, EngineError};
use crate::approval::{Approval, Via};
use crate::store::{CodeCheck, FactorRow};
use crate::time::now_ms;

/// A factor being enrolled: what the person's authenticator app needs.
#[derive(Debug, Clone)]
pub struct Enrolment {
    pub id: String,
    /// Base32, for typing in by hand.
    pub secret: String,
    /// `otpauth://totp/gatebot:PERSON?…`, what the QR code holds.
    pub uri: String,
}

/// Longest label of a factor, in characters.
const MAX_LABEL_CHARS: usize = 40;

impl Engine {
    /// `person` if `[people]` names them: only people have factors.
    fn factor_person(&self, person: &str) -> Result<(), EngineError> {
        if self.config().people.names.iter().any(|p| p == person) {
            Ok(())
        } else {
            Err(EngineError::invalid(
                "person",
                format!(
                    "`{}` is not a person of [people]: add a [people.NAME] table for them (with \
                     their local account as unix = \"…\") to enroll a second factor",
                    crate::names::visible(person)
                ),
            ))
        }
    }

    /// Starts enrolling a factor for `person`, called `label` ("phone"): it counts
    /// once [`Engine::confirm_factor`] takes its first code (within 10 minutes).
    pub async fn enroll_factor(&self, person: &str, label: &str) -> Result<Enrolment, EngineError> {
        self.factor_person(person)?;
        let label = label.trim();
        if label.is_empty()
            || label.chars().count() > MAX_LABEL_CHARS
            || label.chars().any(char::is_control)
        {
            return Err(EngineError::invalid(
                "label",
                format!("name the factor in 1 to {MAX_LABEL_CHARS} characters, like \"phone\""),
            ));
        }
        let secret = crate::factor::new_secret();
        let uri = crate::factor::uri(&secret, person)
            .ok_or_else(|| EngineError::invalid("person", "cannot make an authenticator URI"))?;
        let id = ulid::Ulid::new().to_string();
        let (i, p, l, s) = (
            id.clone(),
            person.to_string(),
            label.to_string(),
            secret.clone(),
        );
        self.blocking(move |st| st.add_factor(&i, &p, &l, &s, now_ms()))
            .await?;
        Ok(Enrolment { id, secret, uri })
    }

    /// Finishes enrolling factor `id` of `person` with its first code.
    pub async fn confirm_factor(
        &self,
        person: &str,
        id: &str,
        code: &str,
        via: Via,
    ) -> Result<(), EngineError> {
        self.factor_person(person)?;
        let (p, i, c) = (person.to_string(), id.to_string(), code.to_string());
        let checked = self
            .blocking(move |s| s.confirm_factor(&p, &i, &c, &via, now_ms()))
            .await?;
        match checked {
            CodeCheck::Accepted { .. } => {
                tracing::info!(person, factor = id, "second factor enrolled");
                Ok(())
            }
            CodeCheck::NoFactor => Err(EngineError::invalid(
                "factor",
                format!(
                    "no enrolment {} of yours is waiting for its first code (one waits 10 min): \
                     start again",
                    crate::names::visible(id)
                ),
            )),
            refused => Err(EngineError::CodeRefused { refused }),
        }
    }

    /// `person`'s factors (enrolments under way too), oldest first.
    pub async fn factors(&self, person: &str) -> Result<Vec<FactorRow>, EngineError> {
        let p = person.to_string();
        self.blocking(move |s| s.factors(&p, now_ms())).await
    }

    /// Removes factor `id` of `person` after a fresh code from any of their factors.
    pub async fn remove_factor(
        &self,
        person: &str,
        id: &str,
        code: &str,
        via: Via,
    ) -> Result<(), EngineError> {
        let (p, i, c) = (person.to_string(), id.to_string(), code.to_string());
        let removed = self
            .blocking(move |s| s.remove_factor(&p, &i, &c, &via, now_ms()))
            .await?;
        match removed {
            None => Err(EngineError::not_found(super::What::Factor, id)),
            Some(CodeCheck::Accepted { .. }) => Ok(()),
            Some(refused) => Err(EngineError::CodeRefused { refused }),
        }
    }

    /// Whether `person`'s second factor stands confirmed on `surface` (`cli`, or
    /// `session:ID`) for an approval that needs one: with `code`, if it is right (and
    /// new), which opens the step-up window there; without, if the window is open.
    /// Each use renews the window for `[step_up] window`. A wrong code is an error.
    pub async fn step_up(
        &self,
        person: &str,
        surface: &str,
        code: Option<&str>,
        via: Via,
    ) -> Result<bool, EngineError> {
        let window = i64::try_from(self.config().teams.step_up_window.as_millis()).unwrap_or(0);
        let (p, s) = (person.to_string(), surface.to_string());
        match code {
            Some(code) => {
                let c = code.to_string();
                let checked = self
                    .blocking(move |st| {
                        let now = now_ms();
                        let checked = st.check_code(&p, &c, &via, now)?;
                        if let CodeCheck::Accepted { .. } = checked {
                            st.open_step_up(&p, &s, now.saturating_add(window))?;
                        }
                        Ok(checked)
                    })
                    .await?;
                match checked {
                    CodeCheck::Accepted { .. } => Ok(true),
                    refused => Err(EngineError::CodeRefused { refused }),
                }
            }
            None => {
                self.blocking(move |st| {
                    let now = now_ms();
                    st.use_step_up(&p, &s, now, now.saturating_add(window))
                })
                .await
            }
        }
    }

    /// The refusal of `person`'s approval of `a` without a second factor, saying
    /// whether they have one to use.
    pub(super) async fn step_up_required(
        &self,
        a: &Approval,
        person: &str,
    ) -> Result<EngineError, EngineError> {
        let enrolled = self
            .factors(person)
            .await?
            .iter()
            .any(|f| f.confirmed_at.is_some());
        Ok(EngineError::StepUpRequired {
            request: a.short_id.clone(),
            enrolled,
        })
    }
}
