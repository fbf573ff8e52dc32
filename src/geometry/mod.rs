//! Domain geometry: points on the Earth, geofences, routes.

pub mod earth;
pub mod geofence;
pub mod rounding;
pub mod route;
pub mod route_files;
pub mod route_import;
