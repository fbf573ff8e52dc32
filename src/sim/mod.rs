//! The discrete-event fleet simulator: a checked [`World`] in, tracker reports and ground truth
//! out.
//!
//! **Invariant:** sans-IO and deterministic. No filesystem, database, wall clock or unseeded
//! randomness here: time is simulated, every random draw comes from a stream derived from the
//! scenario seed, and everything produced goes to the [`Sink`] the caller provides. The
//! detection engine never imports this module, nor this module the engine. `tests/it/tidy.rs`
//! holds both rules.
//!
//! Vehicles do not interact, so each runs as its own agent ([`agent`]) over the whole period
//! with its own event queue; callers may run units in parallel and still get identical output.

mod agent;
mod course;
mod device;
mod gnss;
mod plan;
mod rng;
mod roads;
pub mod truth;

pub use agent::{MIN_TRUTH_STOP_S, Unhonoured};
pub use course::{Course, Span};
pub use gnss::{Report, TrueSample};
pub use plan::Planned;
pub use roads::{Roads, RouteRoads};
pub use truth::{StopReason, TruthEvent, TruthHeader};

use crate::geometry::geofence::Geofence;
use crate::geometry::route::Route;
use crate::scenario::World;

/// Where the simulator puts what it produces.
pub trait Sink {
    /// A position as the tracker delivered it (only those received by `ahora`).
    fn report(&mut self, report: &Report);
    /// A fact of the ground truth.
    fn truth(&mut self, event: TruthEvent);
}

/// A world prepared for simulation: its routes with their shortened loops and courses, and
/// the injection plan.
pub struct Simulation {
    pub world: World,
    pub roads: Roads,
    pub plan: Vec<Vec<Planned>>,
}

impl Simulation {
    pub fn new(world: World) -> Simulation {
        let roads = Roads::new(&world.routes, &world.fences);
        let plan = plan::plan(&world);
        Simulation { world, roads, plan }
    }

    /// [`Simulation::new`] with the roads made by `roads` from the world's routes and fences,
    /// which must return [`Roads::new`]'s (a caller with threads makes each route's
    /// [`RouteRoads`] on its own and puts them together with [`Roads::from_parts`]).
    pub fn with_roads(
        world: World,
        roads: impl FnOnce(&[Route], &[Geofence]) -> Roads,
    ) -> Simulation {
        let roads = roads(&world.routes, &world.fences);
        let plan = plan::plan(&world);
        Simulation { world, roads, plan }
    }

    /// Simulates one unit over the whole period; returns the injections its days gave no
    /// chance to happen (the caller refuses the scenario for them).
    pub fn run_unit(&self, unit: usize, sink: &mut impl Sink) -> Vec<Unhonoured> {
        agent::Agent::new(&self.world, &self.roads, unit, &self.plan[unit], sink).run()
    }
}
