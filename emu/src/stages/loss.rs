//! Frame loss: independent (Bernoulli), Gilbert-Elliott, or netem's four-state chain.

use crate::config::Params;
use crate::rng::Rng;

enum LossModel {
    /// Independent loss with probability p.
    Bernoulli { p: f64 },
    /// Gilbert-Elliott as netem's `gemodel p r 1-h 1-k`: Good -> Bad with p,
    /// Bad -> Good with r; a frame is lost with 1-k in Good and 1-h in Bad.
    /// The frame's fate is drawn in the state it finds, then the state moves.
    Gilbert { p: f64, r: f64, loss_bad: f64, loss_good: f64, bad: bool },
    /// netem's `loss state p13 p31 p32 p23 p14` (Salsano et al., "Definition of a
    /// general and intuitive loss model for packet networks and its implementation
    /// in the Netem module"): states 1 = received in gap, 2 = received in burst,
    /// 3 = lost in burst, 4 = isolated loss. Each frame moves the chain one step
    /// and is lost when the new state is 3 or 4.
    FourState { p13: f64, p31: f64, p32: f64, p23: f64, p14: f64, state: u8 },
}

pub struct Loss {
    model: LossModel,
    rng: Rng,
}

impl Loss {
    pub(super) fn build(params: &Params, line: usize, rng: Rng) -> Result<Loss, String> {
        params.unknown_keys(&["model", "p", "r", "1-h", "1-k", "p13", "p31", "p32", "p23", "p14"])?;
        let model = match params.str_or("model", "bernoulli") {
            "bernoulli" => LossModel::Bernoulli { p: params.prob("p", 0.0)? },
            "gemodel" => {
                let p = params.prob("p", 0.0)?;
                LossModel::Gilbert {
                    p,
                    r: params.prob("r", 1.0 - p)?,
                    loss_bad: params.prob("1-h", 1.0)?,
                    loss_good: params.prob("1-k", 0.0)?,
                    bad: false,
                }
            }
            "state" => {
                let p13 = params.prob("p13", 0.0)?;
                let p31 = params.prob("p31", 1.0 - p13)?;
                let p32 = params.prob("p32", 0.0)?;
                let p23 = params.prob("p23", 1.0)?;
                let p14 = params.prob("p14", 0.0)?;
                if p13 + p14 > 1.0 || p31 + p32 > 1.0 {
                    return Err(format!("config line {line}: p13+p14 and p31+p32 must be <= 1"));
                }
                LossModel::FourState { p13, p31, p32, p23, p14, state: 1 }
            }
            other => return Err(format!("config line {line}: unknown loss model {other}")),
        };
        Ok(Loss { model, rng })
    }

    pub(super) fn lose(&mut self) -> bool {
        let rng = &mut self.rng;
        match &mut self.model {
            LossModel::Bernoulli { p } => rng.chance(*p),
            LossModel::Gilbert { p, r, loss_bad, loss_good, bad } => {
                let lost = rng.chance(if *bad { *loss_bad } else { *loss_good });
                if *bad {
                    if rng.chance(*r) {
                        *bad = false;
                    }
                } else if rng.chance(*p) {
                    *bad = true;
                }
                lost
            }
            LossModel::FourState { p13, p31, p32, p23, p14, state } => {
                let u = rng.uniform();
                *state = match *state {
                    1 => {
                        if u < *p13 {
                            3
                        } else if u < *p13 + *p14 {
                            4
                        } else {
                            1
                        }
                    }
                    2 => {
                        if u < *p23 {
                            3
                        } else {
                            2
                        }
                    }
                    3 => {
                        if u < *p31 {
                            1
                        } else if u < *p31 + *p32 {
                            2
                        } else {
                            3
                        }
                    }
                    _ => 1,
                };
                *state >= 3
            }
        }
    }

    pub(super) fn state_name(&self) -> Option<String> {
        match &self.model {
            LossModel::Bernoulli { .. } => None,
            LossModel::Gilbert { bad, .. } => Some(if *bad { "bad" } else { "good" }.into()),
            LossModel::FourState { state, .. } => Some(format!("{state}")),
        }
    }
}
