//! The discrete-event simulation of one deployment.
