extension SSDPMatcher {
    /// Panasonic LUMIX (or a Leica body on the same platform): modelName LUMIX (camcorders "Video
    /// Camera" from Panasonic), the pana camera-category field, or a Panasonic/Leica SSDP server
    /// with no description.
    public static let panasonic = SSDPMatcher(vendor: "panasonic", searchTargets: ["urn:schemas-upnp-org:device:MediaServer:1"]) { facts in
        let d = facts.device
        let manufacturer = (d.manufacturer ?? "").lowercased()
        let model = (d.modelName ?? "").lowercased()
        let server = (d.server ?? "").lowercased()
        let hasPanaCamera = facts.leaves.contains { $0.0.hasSuffix("X_CamCategory") }
        let isPanasonic = model.contains("lumix")
            || hasPanaCamera
            || (manufacturer.contains("panasonic") && model == "video camera")
            || (manufacturer.contains("leica") && (facts.description ?? "").contains("urn:schemas-panasonic-com:pana"))
            || (facts.description == nil && (server.contains("panasonic") || server.contains("leica-upnp")))
        return isPanasonic ? "panasonic://\(SSDPDeviceFacts.urlHost(facts.locationHost))" : nil
    }
}

extension DiscoveredDevice.Kind {
    public static let panasonic = DiscoveredDevice.Kind(rawValue: "panasonic")
}
