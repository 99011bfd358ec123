extension SSDPMatcher {
    /// Sony Camera Remote API: the ActionList_URL of the ScalarWebAPI service of type "camera".
    public static let sony = SSDPMatcher(vendor: "sony", searchTargets: ["urn:schemas-sony-com:service:ScalarWebAPI:1"]) { facts in
        var serviceType: String?
        for (name, text) in facts.leaves {
            if name.hasSuffix("X_ScalarWebAPI_ServiceType") { serviceType = text }
            if name.hasSuffix("X_ScalarWebAPI_ActionList_URL"), serviceType == "camera", let url = HTTPURL(text) {
                return "sony://\(SSDPDeviceFacts.urlHost(url.host)):\(url.port)"
            }
        }
        return nil
    }
}

extension DiscoveredDevice.Kind {
    public static let sony = DiscoveredDevice.Kind(rawValue: "sony")
}
